package transfer

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/airlock-mirror/airlock/mirror/retry"
)

// throttledHost returns the host of a 429 or 5xx answer in err ("" if none).
func throttledHost(err error) string {
	var se *retry.StatusError
	if !errors.As(err, &se) || (se.StatusCode != http.StatusTooManyRequests && se.StatusCode < 500) {
		return ""
	}
	u, perr := url.Parse(se.URL)
	if perr != nil {
		return ""
	}
	return u.Host
}
