package transfer

import (
	"fmt"
	"testing"

	"github.com/airlock-mirror/airlock/mirror/retry"
)

func TestThrottledHost(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{retry.NewStatusError("GET", "http://src.example:5000/v2/a/blobs/sha256:1", 429, "", "1"), "src.example:5000"},
		{fmt.Errorf("wrapped: %w", retry.NewStatusError("PUT", "https://dst.example/v2/a/blobs/uploads/x", 503, "", "")), "dst.example"},
		{retry.NewStatusError("GET", "http://src.example/v2/a/blobs/sha256:1", 404, "", ""), ""},
		{fmt.Errorf("connection reset"), ""},
	} {
		if got := throttledHost(tc.err); got != tc.want {
			t.Errorf("throttledHost(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
