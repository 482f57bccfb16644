"""An upload the server refused after a failover, said in plain words beside the file uploader.

Behind several replicas (deploy/), a browser tab's session lives in the memory of one replica. After a failover it
lives on another one than the replica the browser's cookie names, and a file sent to a replica that does not hold
the session is refused with 400 ("Invalid session_id"). deploy/nginx.conf passes such an upload on to each replica
in turn, so it reaches the session's one; but a proxy set up without that (or a session no replica holds any more)
still answers 400, and Streamlit's own file uploader then shows only an error icon on the file, with "AxiosError:
Request failed with status code 400" on hover. The uploader is Streamlit's and the server never sees the refusal, so
the words live in the page: a small script (constant text, no user data) watches every file uploader and, while one
holds that error, puts a note under it that says what happened and what to do. The note goes when the error does
(the failed file removed).
"""

from __future__ import annotations

MESSAGE = (
    "The upload did not reach the server: this page moved to another server (the app restarted one). "
    "Reload the page (what you set comes back from its address) and upload the file again."
)

SCRIPT = """<script>
(() => {
  if (window.__attentionUploads) return;
  window.__attentionUploads = true;
  const UPLOADER = "[data-testid='stFileUploader']";
  // Streamlit's uploader says Axios's words for a 400 (the session not there) in its file chip's alert, unspaced
  // from the next words in the uploader's text ("...status code 400add icon"): no word boundary after the number
  const REFUSED = /status code 400(?!\\d)/;
  const NOTE = "attention-upload-note";
  const check = () => {
    for (const box of document.querySelectorAll(UPLOADER)) {
      let note = box.querySelector(":scope > ." + NOTE);
      const refused = REFUSED.test(box.textContent || "");  // the note's own words never match
      if (refused && !note) {
        note = document.createElement("div");
        note.className = NOTE;
        note.setAttribute("role", "alert");
        note.style.cssText = "margin-top:.5rem;background:#fff3cd;color:#3d2c00;border:1px solid #b58900;"
          + "border-radius:6px;padding:.5rem .75rem;font-size:.875rem;line-height:1.4;";
        note.textContent = "__MESSAGE__";
        box.appendChild(note);
      } else if (!refused && note) {
        note.remove();
      }
    }
  };
  let queued = false;
  new MutationObserver(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; check(); });
  }).observe(document.body, {childList: true, subtree: true, characterData: true});
})();
</script>""".replace("__MESSAGE__", MESSAGE)
