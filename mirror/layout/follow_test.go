package layout

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// trickle is a reader handing out its bytes in small pieces, pausing between
// them, so that a follower catches up with the writer again and again.
type trickle struct {
	b     []byte
	piece int
	pause time.Duration
}

func (r *trickle) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	time.Sleep(r.pause)
	n := copy(p[:min(len(p), r.piece)], r.b)
	r.b = r.b[n:]
	return n, nil
}

func randomBlob(t testing.TB, n int) ([]byte, endpoint.Descriptor) {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	return b, endpoint.Descriptor{Digest: digest.FromBytes(b), Size: int64(n)}
}

// readAllAsync reads r to its end on a goroutine.
func readAllAsync(r io.Reader) chan struct {
	b   []byte
	err error
} {
	ch := make(chan struct {
		b   []byte
		err error
	}, 1)
	go func() {
		b, err := io.ReadAll(r)
		ch <- struct {
			b   []byte
			err error
		}{b, err}
	}()
	return ch
}

// followed returns a new layout and a follower of blob d in it.
func followed(t *testing.T, d endpoint.Descriptor) (*Destination, *Follower) {
	t.Helper()
	dst, err := NewDestination(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, err := dst.Follow(d.Digest, d.Size)
	if err != nil || f == nil {
		t.Fatalf("follow = %v, %v", f, err)
	}
	return dst, f
}

func TestFollowBlob(t *testing.T) {
	ctx := context.Background()
	blob, d := randomBlob(t, 300<<10)
	corrupt := bytes.Clone(blob)
	corrupt[len(corrupt)/2] ^= 0xff

	t.Run("while written", func(t *testing.T) {
		dst, f := followed(t, d)
		got := readAllAsync(f)
		if err := dst.PutBlob(ctx, "", d, &trickle{b: blob, piece: 7 << 10, pause: time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if r.err != nil || !bytes.Equal(r.b, blob) {
			t.Fatalf("followed %d bytes (err %v), want the %d written", len(r.b), r.err, len(blob))
		}
		if !f.Clean() {
			t.Error("clean() = false after one committed attempt")
		}
		// Once held, the layout serves it: nothing to follow.
		if f, err := dst.Follow(d.Digest, d.Size); f != nil || err != nil {
			t.Errorf("follow of a held blob = %v, %v; want nil, nil", f, err)
		}
	})

	t.Run("retried after a corrupted attempt", func(t *testing.T) {
		dst, f := followed(t, d)
		got := readAllAsync(f)
		if err := dst.PutBlob(ctx, "", d, bytes.NewReader(corrupt)); !errors.Is(err, oci.ErrDigestMismatch) {
			t.Fatalf("PutBlob of corrupted bytes = %v, want a digest mismatch", err)
		}
		if err := dst.PutBlob(ctx, "", d, &trickle{b: blob, piece: 64 << 10}); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if r.err != nil || len(r.b) != len(blob) {
			t.Fatalf("followed %d bytes (err %v), want %d", len(r.b), r.err, len(blob))
		}
		if f.Clean() {
			t.Error("clean() = true although bytes may come from the corrupted attempt")
		}
	})

	t.Run("copy failed", func(t *testing.T) {
		dst, f := followed(t, d)
		got := readAllAsync(f)
		half := io.LimitReader(bytes.NewReader(blob), int64(len(blob)/2))
		if err := dst.PutBlob(ctx, "", d, half); err == nil {
			t.Fatal("PutBlob of half the blob succeeded")
		}
		boom := errors.New("registry gone")
		dst.StopFollowing(boom)
		r := <-got
		if !errors.Is(r.err, boom) || len(r.b) != len(blob)/2 {
			t.Fatalf("followed %d bytes, err %v; want the %d written, then %v", len(r.b), r.err, len(blob)/2, boom)
		}
	})

	t.Run("never written", func(t *testing.T) {
		dst, f := followed(t, d)
		if _, err := dst.Follow(d.Digest, d.Size); err == nil {
			t.Error("a second follower of the same blob was accepted")
		}
		got := readAllAsync(f)
		dst.StopFollowing(nil)
		if r := <-got; !errors.Is(r.err, errNotWritten) {
			t.Fatalf("err = %v, want errNotWritten", r.err)
		}
	})

	t.Run("closed while waiting", func(t *testing.T) {
		_, f := followed(t, d)
		got := readAllAsync(f)
		time.Sleep(10 * time.Millisecond)
		f.Close()
		select {
		case r := <-got:
			if !errors.Is(r.err, os.ErrClosed) {
				t.Fatalf("err = %v, want os.ErrClosed", r.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Read still blocked 10 s after Close")
		}
	})
}
