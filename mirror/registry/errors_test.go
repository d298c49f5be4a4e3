package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/airlock-mirror/airlock/internal/testutil/golden"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// errorBodies are the error answers of testdata/errorbodies, as registries
// send them, with the codes each must give (none: the body is kept as text).
var errorBodies = map[string][]endpoint.ErrorCode{
	"distribution2.8-manifest-unknown.json": {endpoint.CodeManifestUnknown},
	"distribution2.8-delete-tag.json":       {endpoint.CodeDigestInvalid},
	"distribution3-sparse-index.json":       {endpoint.CodeManifestBlobUnknown, endpoint.CodeManifestBlobUnknown},
	"distribution3-manifest-unknown.json":   {endpoint.CodeManifestUnknown},
	"distribution3-name-unknown.json":       {endpoint.CodeNameUnknown},
	"distribution3-unauthorized.json":       {endpoint.CodeUnauthorized},
	"distribution3-delete-disabled.json":    {endpoint.CodeUnsupported},
	"distribution3-upload-unknown.json":     {endpoint.CodeBlobUploadUnknown},
	"dockerhub-rate-limit.json":             {endpoint.CodeTooManyRequests},
	"quay-manifest-unknown.json":            {endpoint.CodeManifestUnknown},
	"quay-unauthorized.json":                {endpoint.CodeUnauthorized},
	"quay-manifest-invalid.json":            {endpoint.CodeManifestInvalid},
	"quay-sparse-index.json":                {endpoint.CodeManifestBlobUnknown},
	"harbor-not-found.json":                 {"NOT_FOUND"},
	"harbor-unauthorized.json":              {endpoint.CodeUnauthorized},
	"harbor-immutable-tag.json":             {"PRECONDITION"},
	"ecr-manifest-unknown.json":             {endpoint.CodeManifestUnknown},
	"ecr-name-unknown.json":                 {endpoint.CodeNameUnknown},
	"ecr-immutable-tag.json":                {endpoint.CodeTagInvalid},
	"ecr-token-expired.json":                {endpoint.CodeDenied},
	"ghcr-denied.json":                      {endpoint.CodeDenied},
	"ghcr-manifest-unknown.json":            {endpoint.CodeManifestUnknown},
	"ghcr-rate-limit.json":                  {endpoint.CodeTooManyRequests},
	"lone-entry.json":                       {endpoint.CodeNameUnknown},
	"errors-one-object.json":                {endpoint.CodeDenied},
	"artifactory-no-code.json":              nil,
	"empty-list.json":                       nil,
	"nginx-502.html":                        nil,
	"go-404.txt":                            nil,
	"empty.txt":                             nil,
}

// TestParseErrorBody reads each body of testdata/errorbodies (Distribution 2.8
// and 3, Docker Hub, Quay, Harbor, ECR, GHCR, and answers that hold no error
// list) and checks the codes it finds; what it makes of each, messages and
// details included, is testdata/errorbodies.golden (go test -update rewrites
// it).
func TestParseErrorBody(t *testing.T) {
	files, err := filepath.Glob("testdata/errorbodies/*")
	if err != nil || len(files) != len(errorBodies) {
		t.Fatalf("testdata/errorbodies holds %d files (%v), the test knows %d", len(files), err, len(errorBodies))
	}
	var out bytes.Buffer
	for _, f := range files {
		name := filepath.Base(f)
		want, known := errorBodies[name]
		if !known {
			t.Errorf("%s: not in errorBodies", name)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		entries, text := parseErrorBody(b)
		var got []endpoint.ErrorCode
		fmt.Fprintf(&out, "== %s\n", name)
		for _, e := range entries {
			got = append(got, e.Code)
			fmt.Fprintf(&out, "%s\n", e)
		}
		if text != "" {
			fmt.Fprintf(&out, "text %q\n", text)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: codes %v, want %v", name, got, want)
		}
		if len(want) == 0 && len(bytes.TrimSpace(b)) > 0 && text == "" {
			t.Errorf("%s: no list and no text", name)
		}
	}
	golden.Check(t, "testdata/errorbodies.golden", out.Bytes())
}

// FuzzParseErrorBody: any body gives either entries or text, within the
// bounds, never both; entries carry a code, upper case, and read back the
// same once written as a list again.
func FuzzParseErrorBody(f *testing.F) {
	files, _ := filepath.Glob("testdata/errorbodies/*")
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"errors":[{"code":5,"message":["a"],"detail":null}],"code":"X"}`))
	f.Add([]byte(`{"errors":"DENIED"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		entries, text := parseErrorBody(body)
		if len(entries) > 0 && text != "" {
			t.Fatalf("entries %v and text %q", entries, text)
		}
		if len(entries) > maxErrorEntries || len(text) > maxErrorText+len("…") {
			t.Fatalf("%d entries, %d bytes of text: over the bounds", len(entries), len(text))
		}
		valid := true
		for _, e := range entries {
			c := string(e.Code)
			if c == "" || c != strings.ToUpper(strings.TrimSpace(c)) {
				t.Fatalf("code %q", c)
			}
			for _, s := range []string{c, e.Message, e.Detail} {
				if len(s) > maxErrorText+len("…") {
					t.Fatalf("%d bytes in an entry: over the bound", len(s))
				}
				valid = valid && utf8.ValidString(s)
			}
		}
		if len(entries) == 0 || !valid {
			return
		}
		again, err := json.Marshal(map[string]any{"errors": entries})
		if err != nil {
			t.Fatal(err)
		}
		if back, text := parseErrorBody(again); !slices.Equal(back, entries) || text != "" {
			t.Fatalf("%s read back as %v, %q; want %v", again, back, text, entries)
		}
	})
}

// TestStatusError: an unexpected answer becomes a registry error naming the
// request without its secrets, the host that answered, the codes of its body,
// its Retry-After and, for a 401, an expired token.
func TestStatusError(t *testing.T) {
	u, _ := url.Parse("https://user:secret@cdn.example.com/v2/ns/app/blobs/sha256:0?X-Signature=abc")
	resp := &http.Response{
		StatusCode: http.StatusUnauthorized,
		Request:    &http.Request{Method: http.MethodGet, URL: u},
		Header: http.Header{"Retry-After": {"3"}, "Www-Authenticate": {
			`Bearer realm="https://auth.example.com/token",error="invalid_token"`}},
		Body: io.NopCloser(strings.NewReader(`{"errors":[{"code":"UNAUTHORIZED","message":"token expired"}]}`)),
	}
	re := statusError(resp)
	if re.Host != "cdn.example.com" || re.URL != "https://cdn.example.com/v2/ns/app/blobs/sha256:0" || re.StatusCode != 401 ||
		!re.ExpiredToken || !re.HasRetryAfter || re.RetryAfter != 3*time.Second || !re.Has(endpoint.CodeUnauthorized) {
		t.Fatalf("%+v", re)
	}
	want := "GET https://cdn.example.com/v2/ns/app/blobs/sha256:0: 401 Unauthorized: UNAUTHORIZED: token expired"
	if re.Error() != want {
		t.Fatalf("%q, want %q", re.Error(), want)
	}
	var err error = fmt.Errorf("get blob: %w", re)
	if endpoint.StatusOf(err) != 401 || !endpoint.HasCode(err, endpoint.CodeDenied, endpoint.CodeUnauthorized) || endpoint.HasCode(err, endpoint.CodeDenied) {
		t.Fatalf("helpers on %v", err)
	}
	if endpoint.StatusOf(errors.New("x")) != 0 || endpoint.HasCode(errors.New("x"), endpoint.CodeDenied) {
		t.Fatal("helpers on an error that is no answer")
	}
}

// TestTypedTransportError: go-containerregistry's error for the answer to a
// ping or a token request becomes a registry error with its status, codes
// and host, its text and what it wraps unchanged.
func TestTypedTransportError(t *testing.T) {
	u, _ := url.Parse("https://auth.example.com/token?scope=repository:ns/app:pull")
	te := &transport.Error{StatusCode: http.StatusForbidden, Request: &http.Request{Method: http.MethodGet, URL: u},
		Errors: []transport.Diagnostic{{Code: "denied", Message: "no pull", Detail: map[string]string{"repo": "ns/app"}}}}
	wrapped := &url.Error{Op: "Get", URL: "https://quay.example.com/v2/ns/app/manifests/v1", Err: te}
	err := typedTransportError(wrapped)
	re, ok := endpoint.AsRegistryError(err)
	if !ok || re.StatusCode != 403 || re.Host != "auth.example.com" || re.URL != "https://auth.example.com/token" ||
		!re.Has(endpoint.CodeDenied) || re.Errors[0].Detail != `{"repo":"ns/app"}` {
		t.Fatalf("%+v", re)
	}
	var back *transport.Error
	var ue *url.Error
	if err.Error() != wrapped.Error() || !errors.As(err, &back) || !errors.As(err, &ue) {
		t.Fatalf("%q: not the original's text, or it no longer wraps it", err)
	}
	if typedTransportError(err) != err {
		t.Fatal("typed twice")
	}
	if plain := errors.New("x"); typedTransportError(plain) != plain || typedTransportError(nil) != nil {
		t.Fatal("an error without an answer changed")
	}
}
