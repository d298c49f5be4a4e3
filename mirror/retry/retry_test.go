package retry

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// answer is a registry's answer with status code and an error list of codes.
func answer(code int, codes ...endpoint.ErrorCode) *endpoint.RegistryError {
	re := &endpoint.RegistryError{Method: "GET", URL: "u", StatusCode: code}
	for _, c := range codes {
		re.Errors = append(re.Errors, endpoint.ErrorDetail{Code: c})
	}
	return re
}

func TestRetryable(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"canceled", context.Canceled, false},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), false},
		{"unreachable", fmt.Errorf("x: %w", endpoint.ErrRegistryUnreachable), false},
		{"permanent 503", Permanent(answer(503)), false},
		{"503", answer(503), true},
		{"429", answer(429), true},
		{"408", answer(408), true},
		{"501", answer(501), false},
		{"404", answer(404), false},
		{"401", answer(401), false},
		{"400 digest invalid", answer(400, endpoint.CodeDigestInvalid), true},
		{"400 other", answer(400, endpoint.CodeNameInvalid), false},
		{"digest mismatch", fmt.Errorf("blob: %w", oci.ErrDigestMismatch), true},
		{"short body", ErrShortBody, true},
		{"upload gone", ErrUploadGone, true},
		{"unexpected EOF", io.ErrUnexpectedEOF, true},
		{"reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		{"refused", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{"unknown host", &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}, false},
		{"unknown CA", x509.UnknownAuthorityError{}, false},
		{"plain HTTP server", errors.New("http: server gave HTTP response to HTTPS client"), false},
		{"other", errors.New("something else"), false},
	} {
		if got := isRetryable(c.err); got != c.want {
			t.Errorf("%s: isRetryable(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

func TestDelay(t *testing.T) {
	p := Policy{Times: 9}.withDefaults()
	for attempt, base := range map[int]time.Duration{1: 250 * time.Millisecond, 2: 500 * time.Millisecond, 3: time.Second, 20: 30 * time.Second} {
		for range 50 {
			if d := p.delay(attempt, 0, false); d < base/2 || d > base/2+base {
				t.Fatalf("attempt %d: delay %s outside %s ± 50%%", attempt, d, base)
			}
		}
	}
	if d := p.delay(1, 7*time.Second, true); d != 7*time.Second {
		t.Errorf("Retry-After 7s: delay %s", d)
	}
	if d := p.delay(1, time.Hour, true); d != 2*time.Minute {
		t.Errorf("Retry-After 1h: delay %s, want the 2m cap", d)
	}
	// --retry-delay: a fixed wait, whatever the attempt; Retry-After still wins.
	f := Policy{Times: 9, Delay: 3 * time.Second}.withDefaults()
	for _, attempt := range []int{1, 2, 9} {
		if d := f.delay(attempt, 0, false); d != 3*time.Second {
			t.Errorf("--retry-delay 3s, attempt %d: delay %s", attempt, d)
		}
	}
	if d := f.delay(1, 7*time.Second, true); d != 7*time.Second {
		t.Errorf("--retry-delay 3s with Retry-After 7s: delay %s", d)
	}
}

func TestParseRetryAfter(t *testing.T) {
	for h, want := range map[string]struct {
		d  time.Duration
		ok bool
	}{"": {0, false}, "3": {3 * time.Second, true}, "0": {0, true}, "-1": {0, false}, "soon": {0, false},
		"Mon, 02 Jan 2006 15:04:05 GMT": {0, true}} {
		d, ok := ParseRetryAfter(h)
		if d != want.d || ok != want.ok {
			t.Errorf("ParseRetryAfter(%q) = %s, %v; want %s, %v", h, d, ok, want.d, want.ok)
		}
	}
	if d, ok := ParseRetryAfter(time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)); !ok || d < 58*time.Minute {
		t.Errorf("a date an hour ahead: %s, %v", d, ok)
	}
}

func TestDo(t *testing.T) {
	fast := Policy{Times: 3, Base: time.Microsecond, Max: time.Microsecond}
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		errs      []error // the answers of the attempts; nil ends
		wantCalls int
		wantErr   bool
	}{
		{"first try", []error{nil}, 1, false},
		{"two 503 then ok", []error{answer(503), answer(503), nil}, 3, false},
		{"404 not retried", []error{answer(404)}, 1, true},
		{"times exhausted", []error{io.EOF, io.EOF, io.EOF, io.EOF, io.EOF}, 4, true},
	} {
		calls := 0
		err := fast.Do(ctx, nil, c.name, func(ctx context.Context) error {
			calls++
			if FromContext(ctx) == nil {
				t.Errorf("%s: the operation is not in the context", c.name)
			}
			return c.errs[calls-1]
		})
		if calls != c.wantCalls || (err != nil) != c.wantErr {
			t.Errorf("%s: %d calls, err %v; want %d calls, error %v", c.name, calls, err, c.wantCalls, c.wantErr)
		}
	}
	// Inside an operation, a request makes one attempt: the outer one retries.
	calls := 0
	_ = fast.Do(ctx, nil, "outer", func(ctx context.Context) error {
		return fast.Do(ctx, nil, "inner", func(context.Context) error { calls++; return io.EOF })
	})
	if calls != 4 {
		t.Errorf("nested Do: inner ran %d times, want 4 (one per outer attempt)", calls)
	}
	// A cancelled context stops the waiting.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	slow := Policy{Times: 3, Base: time.Hour, Max: time.Hour}
	start := time.Now()
	if err := slow.Do(cctx, nil, "cancelled", func(context.Context) error { return io.EOF }); err == nil {
		t.Error("cancelled: no error")
	}
	if time.Since(start) > time.Minute {
		t.Error("cancelled: waited the backoff")
	}
}
