package registry

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// recordConn is a net.Conn that records its writes.
type recordConn struct {
	net.Conn
	buf    bytes.Buffer
	writes []int
}

func (c *recordConn) Write(p []byte) (int, error) {
	c.writes = append(c.writes, len(p))
	return c.buf.Write(p)
}

// TestLargeWriteConn: a body copied to the connection (as net/http copies a
// request body: a LimitedReader, through ReadFrom) arrives whole, in writes of
// up to largeWrite bytes, however its reader returns it.
func TestLargeWriteConn(t *testing.T) {
	cases := []struct {
		name      string
		size      int
		oneByte   bool
		maxWrites int
	}{
		{"empty", 0, false, 0},
		{"small", 100, false, 1},
		{"over 32 KiB", 32<<10 + 1, false, 1},
		{"3 MiB", 3 << 20, false, 3},
		{"3 MiB and a byte", 3<<20 + 1, false, 4},
		{"a byte at a time", 1000, true, 1000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := bytes.Repeat([]byte{7}, tc.size)
			var r io.Reader = bytes.NewReader(body)
			if tc.oneByte {
				r = &oneByte{r}
			}
			rc := &recordConn{}
			n, err := largeWriteConn{rc}.ReadFrom(io.LimitReader(r, int64(tc.size)))
			if err != nil || n != int64(tc.size) || !bytes.Equal(rc.buf.Bytes(), body) {
				t.Fatalf("copied %d of %d bytes (%v), content equal: %v", n, tc.size, err, bytes.Equal(rc.buf.Bytes(), body))
			}
			if len(rc.writes) > tc.maxWrites {
				t.Fatalf("%d writes (%v), want at most %d", len(rc.writes), rc.writes, tc.maxWrites)
			}
		})
	}
}

// TestLargeWritesTransport: a client whose dialer is wrapped by largeWrites
// sends request bodies intact.
func TestLargeWritesTransport(t *testing.T) {
	body := strings.Repeat("large-writes", 300_000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil || string(b) != body {
			http.Error(w, "body differs", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = largeWrites(tr.DialContext)
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}
	for range 3 { // a new connection, then reused ones
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPut, srv.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("status %s", resp.Status)
		}
	}
}
