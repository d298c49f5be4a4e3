package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

func TestIfNecessary(t *testing.T) {
	transient := fmt.Errorf("pull: %w", syscall.ECONNRESET)
	permanent := errors.New("manifest unknown")
	for _, tc := range []struct {
		name     string
		errs     []error // what each attempt returns
		max      int
		attempts int
		wantErr  error
	}{
		{"success first", []error{nil}, 3, 1, nil},
		{"transient then success", []error{transient, transient, nil}, 3, 3, nil},
		{"transient until out of retries", []error{transient, transient, transient}, 2, 3, transient},
		{"permanent not retried", []error{permanent, nil}, 3, 1, permanent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			err := IfNecessary(context.Background(), func() error {
				e := tc.errs[n]
				n++
				return e
			}, &Options{MaxRetry: tc.max, Delay: time.Millisecond})
			if n != tc.attempts || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("attempts %d, err %v; want %d, %v", n, err, tc.attempts, tc.wantErr)
			}
		})
	}
}

func TestIfNecessaryStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := IfNecessary(ctx, func() error {
		n++
		cancel()
		return io.ErrUnexpectedEOF
	}, &Options{MaxRetry: 5, Delay: time.Hour})
	if n != 1 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("attempts %d, err %v; want 1 attempt and its error", n, err)
	}
}

func TestIsErrorRetryable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.Canceled, false},
		{errors.New("unauthorized"), false},
		{context.DeadlineExceeded, true},
		{io.ErrUnexpectedEOF, true},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{fmt.Errorf("copy: %w", syscall.EPIPE), true},
		{errors.Join(syscall.ECONNRESET, io.ErrUnexpectedEOF), true},
		{errors.Join(syscall.ECONNRESET, errors.New("denied")), false},
	} {
		if got := IsErrorRetryable(tc.err); got != tc.want {
			t.Errorf("IsErrorRetryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
