package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// Get says how GetDocument reads a small document over HTTP (an update
// graph, a release signature).
type Get struct {
	// Client sends the requests (nil: http.DefaultClient).
	Client *http.Client
	// Timeout bounds each attempt, answer included (0: one minute).
	Timeout time.Duration
	// MaxBytes bounds the body; a longer one fails with ErrTooLarge.
	MaxBytes int64
	// Accept, when set, is the request's Accept header.
	Accept string
}

// ErrTooLarge is a body longer than Get.MaxBytes.
var ErrTooLarge = errors.New("answer too large")

// GetDocument reads u's body under the policy p: each attempt has its own
// deadline; an answer other than 200 is an endpoint.RegistryError (5xx and
// 429 are tried again, after Retry-After when given; a 404 is
// endpoint.ErrNotFound for errors.Is and is not tried again); a body longer
// than g.MaxBytes fails with ErrTooLarge. Messages name u without its user
// information.
func (p Policy) GetDocument(ctx context.Context, log *slog.Logger, u string, g Get) ([]byte, error) {
	shown := u
	if pu, err := url.Parse(u); err == nil {
		pu.User = nil
		shown = pu.String()
	}
	var body []byte
	err := p.Do(ctx, log, "GET "+shown, func(ctx context.Context) error {
		var err error
		body, err = getOnce(ctx, u, shown, g)
		return err
	})
	return body, err
}

func getOnce(ctx context.Context, u, shown string, g Get) ([]byte, error) {
	t := g.Timeout
	if t <= 0 {
		t = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, Permanent(err)
	}
	if g.Accept != "" {
		req.Header.Set("Accept", g.Accept)
	}
	c := g.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		text, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		re := &endpoint.RegistryError{Method: http.MethodGet, URL: shown, Host: req.URL.Host, StatusCode: resp.StatusCode,
			Text: strings.TrimSpace(string(text))}
		re.RetryAfter, re.HasRetryAfter = ParseRetryAfter(resp.Header.Get("Retry-After"))
		return nil, re
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, g.MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > g.MaxBytes {
		return nil, Permanent(fmt.Errorf("%s: %w: larger than %d bytes", shown, ErrTooLarge, g.MaxBytes))
	}
	return body, nil
}
