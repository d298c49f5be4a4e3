package endpoint

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/opencontainers/go-digest"
)

func TestRegistryErrorText(t *testing.T) {
	cause := errors.New("Get https://r.example/v2/: x509: certificate signed by unknown authority; unexpected status code 400 Bad Request")
	for _, tc := range []struct {
		err  *RegistryError
		want string
	}{
		{&RegistryError{Method: "HEAD", URL: "https://r.example/v2/a/manifests/v1", StatusCode: 404},
			"HEAD https://r.example/v2/a/manifests/v1: 404 Not Found"},
		{&RegistryError{Method: "PUT", URL: "u", StatusCode: 400, Errors: []ErrorDetail{
			{Code: CodeManifestBlobUnknown, Message: "blob unknown to registry", Detail: "sha256:1"},
			{Code: CodeManifestBlobUnknown, Message: "blob unknown to registry", Detail: "{}"}}},
			"PUT u: 400 Bad Request: MANIFEST_BLOB_UNKNOWN: blob unknown to registry; sha256:1; MANIFEST_BLOB_UNKNOWN: blob unknown to registry"},
		{&RegistryError{Method: "GET", URL: "u", StatusCode: 502, Text: "<html>bad gateway</html>"},
			"GET u: 502 Bad Gateway: <html>bad gateway</html>"},
		{&RegistryError{StatusCode: 400, Cause: cause}, cause.Error()},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}

func TestRegistryErrorCodes(t *testing.T) {
	err := fmt.Errorf("put manifest: %w", &RegistryError{StatusCode: 400, Errors: []ErrorDetail{{Code: CodeDigestInvalid}}})
	re, ok := AsRegistryError(err)
	if !ok || !re.Has(CodeSizeInvalid, CodeDigestInvalid) || re.Has(CodeSizeInvalid) {
		t.Fatalf("%v: Has", err)
	}
	if StatusOf(err) != 400 || !HasCode(err, CodeDigestInvalid) || HasCode(err, CodeNameUnknown) {
		t.Fatalf("%v: StatusOf, HasCode", err)
	}
	if _, ok := AsRegistryError(errors.New("x")); ok || StatusOf(nil) != 0 || HasCode(nil, CodeDenied) {
		t.Fatal("an error that is no answer")
	}
}

func TestRegistryErrorNotFound(t *testing.T) {
	for _, tc := range []struct {
		err  *RegistryError
		want bool
	}{
		{&RegistryError{StatusCode: 404}, true},
		{&RegistryError{StatusCode: 400, Errors: []ErrorDetail{{Code: CodeManifestUnknown}}}, true},
		{&RegistryError{StatusCode: 400, Errors: []ErrorDetail{{Code: CodeBlobUnknown}}}, true},
		{&RegistryError{StatusCode: 403, Errors: []ErrorDetail{{Code: CodeNameUnknown}}}, true},
		{&RegistryError{StatusCode: 400, Errors: []ErrorDetail{{Code: CodeManifestBlobUnknown}}}, false},
		{&RegistryError{StatusCode: 401}, false},
		{&RegistryError{StatusCode: 500}, false},
	} {
		if got := errors.Is(fmt.Errorf("read: %w", tc.err), ErrNotFound); got != tc.want {
			t.Errorf("%v: errors.Is(ErrNotFound) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestInSlot(t *testing.T) {
	ctx := context.Background()
	if HasSlot(ctx) || !HasSlot(InSlot(ctx)) || !HasSlot(context.WithoutCancel(InSlot(ctx))) {
		t.Fatal("InSlot marks a context and what derives from it, nothing else")
	}
}

func TestHeldElsewhere(t *testing.T) {
	d := digest.FromString("a")
	h := HeldElsewhere{d: ""}
	if !h.Has(d) || h.Has(digest.FromString("b")) || HeldElsewhere(nil).Has(d) {
		t.Fatal("Has")
	}
}
