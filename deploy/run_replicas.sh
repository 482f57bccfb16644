#!/usr/bin/env bash
# Run K replicas of the dashboard behind nginx (sticky sessions, websocket upgrade), in the foreground.
#
#   bash deploy/run_replicas.sh [K] [LISTEN]        e.g.  bash deploy/run_replicas.sh 2 8080
#
# K replicas (default 2; one per core is a good start) listen on 127.0.0.1 only, on ports FIRST_PORT,
# FIRST_PORT+1, ... (default 8501...), or on the ports listed in REPLICA_PORTS ("8601 8602"); nginx listens on
# LISTEN (default 8080, every interface; "127.0.0.1:8080" for this machine only) and is the only public door.
# RUN_DIR (default deploy/run) holds the pid files, each replica's log, nginx's logs and the filled-in config.
# Ctrl+C (or SIGTERM) stops nginx and every replica. Needs nginx (Debian: apt-get install nginx) and the
# Python environment of the README's quick start (activated, or PYTHON=/path/to/python).
set -euo pipefail
cd "$(dirname "$0")/.."

K="${1:-${REPLICAS:-2}}"
LISTEN="${2:-${LISTEN:-8080}}"
FIRST_PORT="${FIRST_PORT:-8501}"
RUN_DIR="$(mkdir -p "${RUN_DIR:-deploy/run}" && cd "${RUN_DIR:-deploy/run}" && pwd)"
PYTHON="${PYTHON:-python}"
NGINX="${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}"
read -r -a PORTS <<< "${REPLICA_PORTS:-$(seq -s ' ' "$FIRST_PORT" $((FIRST_PORT + K - 1)))}"

[ -x "$NGINX" ] || { echo "nginx not found (Debian: apt-get install nginx)" >&2; exit 1; }
mkdir -p "$RUN_DIR/nginx-tmp"
rm -f "$RUN_DIR"/*.pid

PIDS=()
stop() {
  trap - INT TERM EXIT
  echo "stopping nginx and ${#PORTS[@]} replicas"
  kill "${PIDS[@]}" 2>/dev/null || true
  wait "${PIDS[@]}" 2>/dev/null || true
  rm -f "$RUN_DIR"/*.pid
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

SERVERS=""
for i in "${!PORTS[@]}"; do
  port="${PORTS[$i]}"
  "$PYTHON" -m streamlit run streamlit_app.py --server.address 127.0.0.1 --server.port "$port" \
    > "$RUN_DIR/replica-$i.log" 2>&1 &
  PIDS+=($!)
  echo $! > "$RUN_DIR/replica-$i.pid"
  SERVERS+="server 127.0.0.1:$port; "
done

# nginx starts once every replica answers its health check (a request sent earlier would find no server).
"$PYTHON" - "${PORTS[@]}" <<'PY'
import sys, time, urllib.request

for port in sys.argv[1:]:
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read()
            break
        except OSError:
            time.sleep(0.2)
    else:
        sys.exit(f"replica on port {port} did not start within 2 minutes")
PY

sed -e "s|@LISTEN@|$LISTEN|" -e "s|@SERVERS@|$SERVERS|" -e "s|@RUN_DIR@|$RUN_DIR|g" deploy/nginx.conf \
  > "$RUN_DIR/nginx.conf"
"$NGINX" -t -q -e "$RUN_DIR/nginx-error.log" -c "$RUN_DIR/nginx.conf"
"$NGINX" -e "$RUN_DIR/nginx-error.log" -c "$RUN_DIR/nginx.conf" -g "daemon off;" &
PIDS+=($!)
echo $! > "$RUN_DIR/nginx-master.pid"
echo "nginx on $LISTEN -> ${#PORTS[@]} replicas on 127.0.0.1:${PORTS[*]} (logs and pids in $RUN_DIR); Ctrl+C stops all"

# Stop everything as soon as any of them stops (a replica that dies would leave its students without a server).
wait -n "${PIDS[@]}"
echo "a process stopped; stopping the rest" >&2
exit 1
