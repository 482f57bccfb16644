#!/usr/bin/env bash
# Run K replicas of the dashboard behind nginx (sticky sessions, websocket upgrade), in the foreground.
#
#   bash deploy/run_replicas.sh [K] [LISTEN]        e.g.  bash deploy/run_replicas.sh 2 8080
#
# K replicas (1 to 10; default 2, one per core is a good start) listen on 127.0.0.1 only, on ports FIRST_PORT,
# FIRST_PORT+1, ... (default 8501...), or on the ports listed in REPLICA_PORTS ("8601 8602"); nginx listens on
# LISTEN (default 8080, every interface; "127.0.0.1:8080" for this machine only) and is the only public door.
# RUN_DIR (default deploy/run, ignored by git) holds the pid files, each replica's log, nginx's logs and the
# filled-in config. PYTHON (default: python on the PATH) runs the replicas; NGINX names the nginx binary.
# A replica that dies (a crash, kill -9, the out-of-memory killer) is started again on its port: nginx sends its
# new browsers to the others meanwhile, and a student who was on it reconnects and loses only that session. A
# replica that dies 5 times within a minute is not restarted again: the script stops everything and exits 1.
# Ctrl+C (or SIGTERM, as systemd sends) stops nginx and every replica and exits 0. SHOW_UPSTREAM=1 adds an
# X-Upstream header naming the replica that answered (the tests use it; off by default, as it names the ports).
# Needs nginx (Debian: apt-get install nginx) and the Python environment of the README's *Run it* (activated,
# or PYTHON=/path/to/python).
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
# an upload after a failover is passed from replica to replica, and nginx follows at most 10 such steps
(( ${#PORTS[@]} >= 1 && ${#PORTS[@]} <= 10 )) || { echo "1 to 10 replicas, not ${#PORTS[@]}" >&2; exit 1; }
mkdir -p "$RUN_DIR/nginx-tmp"
rm -f "$RUN_DIR"/*.pid

# Each child gets its own process group (job control on), so a terminal's Ctrl+C reaches this script alone, and
# the script stops the rest in order: otherwise nginx would take the Ctrl+C first and look like a crash.
set -m

declare -a REPLICA_PID STARTS
NGINX_PID=""
STOPPING=0

stop() {
  trap - INT TERM EXIT
  STOPPING=1
  echo "stopping nginx and ${#PORTS[@]} replicas"
  local pids=("${REPLICA_PID[@]}" ${NGINX_PID:+"$NGINX_PID"})
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  rm -f "$RUN_DIR"/*.pid
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

start_replica() {  # start_replica I: replica I on its port, its log appended to
  local i="$1"
  "$PYTHON" -m streamlit run streamlit_app.py --server.address 127.0.0.1 --server.port "${PORTS[$i]}" \
    >> "$RUN_DIR/replica-$i.log" 2>&1 &
  REPLICA_PID[$i]=$!
  echo $! > "$RUN_DIR/replica-$i.pid"
  STARTS[$i]="${STARTS[$i]:-} $(date +%s)"
}

start_nginx() {
  "$NGINX" -e "$RUN_DIR/nginx-error.log" -c "$RUN_DIR/nginx.conf" -g "daemon off;" &
  NGINX_PID=$!
  echo $! > "$RUN_DIR/nginx-master.pid"
}

too_many_restarts() {  # too_many_restarts I: true when replica I has started 6 times within the last 60 s
  local now recent=0 t
  now=$(date +%s)
  for t in ${STARTS[$1]}; do
    if (( now - t < 60 )); then recent=$((recent + 1)); fi
  done
  (( recent >= 6 ))
}

SERVERS=""
for i in "${!PORTS[@]}"; do
  : > "$RUN_DIR/replica-$i.log"
  start_replica "$i"
  SERVERS+="server 127.0.0.1:${PORTS[$i]}; "
done
# the uploads' upstream: the same server lines, each never taken out of service (deploy/nginx.conf says why)
UPLOAD_SERVERS="${SERVERS//;/ max_fails=0;}"
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

UPSTREAM_HEADER=""
if [ "${SHOW_UPSTREAM:-0}" = 1 ]; then
  UPSTREAM_HEADER='add_header X-Upstream $upstream_addr always;'
fi
# An upload refused by the replica the cookie names (a failover: the session is on another) is passed on to each
# replica in turn, one named location per replica (see deploy/nginx.conf's location /_stcore/upload_file/).
UPLOAD_RETRIES=""
for i in "${!PORTS[@]}"; do
  UPLOAD_RETRIES+="location @upload_$i { proxy_pass http://127.0.0.1:${PORTS[$i]}; proxy_http_version 1.1; "
  UPLOAD_RETRIES+='proxy_set_header Host $http_host; proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for; '
  UPLOAD_RETRIES+='proxy_set_header X-Forwarded-Proto $scheme; proxy_connect_timeout 5s; '
  UPLOAD_RETRIES+='add_header Set-Cookie "st_replica=$st_replica; Path=/; HttpOnly; SameSite=Lax" always; '
  if (( i + 1 < ${#PORTS[@]} )); then
    UPLOAD_RETRIES+="proxy_intercept_errors on; recursive_error_pages on; error_page 400 502 = @upload_$((i + 1)); "
  fi
  UPLOAD_RETRIES+="$UPSTREAM_HEADER } "
done
sed -e "s|@LISTEN@|$LISTEN|" -e "s|@SERVERS@|$SERVERS|" -e "s|@UPLOAD_SERVERS@|$UPLOAD_SERVERS|" \
  -e "s|@RUN_DIR@|$RUN_DIR|g" \
  -e "s|@UPSTREAM_HEADER@|$UPSTREAM_HEADER|" -e "s|@UPLOAD_RETRIES@|$UPLOAD_RETRIES|" \
  deploy/nginx.conf > "$RUN_DIR/nginx.conf"
"$NGINX" -t -q -e "$RUN_DIR/nginx-error.log" -c "$RUN_DIR/nginx.conf"
start_nginx
echo "nginx on $LISTEN -> ${#PORTS[@]} replicas on 127.0.0.1:${PORTS[*]} (logs and pids in $RUN_DIR); Ctrl+C stops all"

# Watch: whenever a child ends, start it again (a stop request ends the loop through the trap instead).
while true; do
  wait -n || true
  (( STOPPING )) && break
  for i in "${!PORTS[@]}"; do
    if ! kill -0 "${REPLICA_PID[$i]}" 2>/dev/null; then
      if too_many_restarts "$i"; then
        echo "replica $i (port ${PORTS[$i]}) keeps stopping (see $RUN_DIR/replica-$i.log); stopping the rest" >&2
        exit 1
      fi
      echo "replica $i (port ${PORTS[$i]}) stopped; starting it again" >&2
      sleep 1
      start_replica "$i"
    fi
  done
  if ! kill -0 "$NGINX_PID" 2>/dev/null; then
    echo "nginx stopped; starting it again" >&2
    sleep 1
    start_nginx
  fi
done
