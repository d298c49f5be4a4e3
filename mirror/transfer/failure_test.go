package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

func TestClassify(t *testing.T) {
	regErr := func(status int, code endpoint.ErrorCode) error {
		re := &endpoint.RegistryError{Method: "GET", URL: "https://r.example/v2/x", Host: "r.example", StatusCode: status}
		if code != "" {
			re.Errors = []endpoint.ErrorDetail{{Code: code}}
		}
		return fmt.Errorf("copy x: %w", re)
	}
	for _, tc := range []struct {
		name  string
		err   error
		class FailureClass
		hint  string // a part of the hint
	}{
		{"disk full", fmt.Errorf("stage blob: %w", &os.PathError{Op: "write", Path: "/t/x", Err: syscall.ENOSPC}), ClassDiskFull, "the disk is full"},
		{"sparse index", fmt.Errorf("push: %w", ErrSparseIndexRefused), ClassRefused, "sparse indexes"},
		{"damaged", fmt.Errorf("blob: %w", oci.ErrDigestMismatch), ClassDamaged, "damaged"},
		{"server error", regErr(http.StatusBadGateway, ""), ClassTransient, "run the same command again"},
		{"too many requests", regErr(http.StatusTooManyRequests, endpoint.CodeTooManyRequests), ClassTransient, "run the same command again"},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), ClassTransient, "run the same command again"},
		{"cut short", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), ClassTransient, "run the same command again"},
		{"timeout", fmt.Errorf("not copied within 10m: %w", context.DeadlineExceeded), ClassTransient, "run the same command again"},
		{"not found", regErr(http.StatusNotFound, endpoint.CodeManifestUnknown), ClassNotFound, ""},
		{"denied", regErr(http.StatusForbidden, endpoint.CodeDenied), ClassDenied, "--authfile"},
		{"refused manifest", regErr(http.StatusBadRequest, endpoint.CodeTagInvalid), ClassRefused, "refused it"},
		{"other", errors.New("something else"), ClassOther, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			class, hint := Classify(tc.err)
			if class != tc.class || !strings.Contains(hint, tc.hint) {
				t.Fatalf("Classify = %s, %q; want %s with %q", class, hint, tc.class, tc.hint)
			}
			if !class.Transient() && strings.Contains(hint, "run the same command again") && class != ClassDiskFull {
				t.Errorf("a failure that needs a change says to run again: %q", hint)
			}
			if len(hint) > 200 {
				t.Errorf("hint of %d characters: one short line wanted", len(hint))
			}
		})
	}
}
