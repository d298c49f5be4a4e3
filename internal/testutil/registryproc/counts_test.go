package registryproc

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Uncommitted counts the bytes sent to upload sessions that no PUT
// committed: a session its client deleted, or left open, counts; one
// committed, or refused and then committed, does not.
func TestUncommittedUploadBytes(t *testing.T) {
	var r Counter
	refuse := true
	h := r.Wrap(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		switch {
		case req.Method == http.MethodPut && refuse && strings.HasSuffix(req.URL.Path, "/refused"):
			w.WriteHeader(http.StatusBadRequest)
		case req.Method == http.MethodPut:
			w.WriteHeader(http.StatusCreated)
		case req.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	send := func(method, session, body string) {
		req := httptest.NewRequest(method, "/v2/a/b/blobs/uploads/"+session+"?digest=sha256:x", strings.NewReader(body))
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	send(http.MethodPatch, "committed", "0123456789")
	send(http.MethodPut, "committed", "abc")
	send(http.MethodPatch, "deleted", "0123456")
	send(http.MethodDelete, "deleted", "")
	send(http.MethodPatch, "open", "01")
	send(http.MethodPut, "refused", "0123")
	c := r.Counts()
	if c.BytesUploaded != 26 || c.Uncommitted != 13 {
		t.Fatalf("uploaded %d, uncommitted %d; want 26 and 13 (7 deleted, 2 open, 4 refused)", c.BytesUploaded, c.Uncommitted)
	}
	refuse = false
	send(http.MethodPut, "refused", "")
	if c := r.Counts(); c.Uncommitted != 9 {
		t.Errorf("after the refused session is committed: uncommitted %d, want 9", c.Uncommitted)
	}
	r.Reset()
	if c := r.Counts(); c.Uncommitted != 0 {
		t.Errorf("after Reset: uncommitted %d", c.Uncommitted)
	}
}
