package bench

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestFirstZStreamsGivesTheMedian(t *testing.T) {
	walls := []time.Duration{5 * time.Second, 7 * time.Second, 4 * time.Second}
	var freshened []int
	i := 0
	r, err := firstZStreams(3, func(n int) error { freshened = append(freshened, n); return nil }, func() (Row, error) {
		w := walls[i]
		i++
		return Row{Wall: w, Note: "link"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Wall != 5*time.Second {
		t.Errorf("wall %s, want the median 5s", r.Wall)
	}
	if len(freshened) != 3 || freshened[2] != 2 {
		t.Errorf("fresh destinations %v, want 0 1 2", freshened)
	}
	if !strings.HasPrefix(r.Note, "median of 3 runs") || !strings.Contains(r.Note, "5.00 s, 7.00 s, 4.00 s") || !strings.HasSuffix(r.Note, "; link") {
		t.Errorf("note %q", r.Note)
	}

	one, err := firstZStreams(1, func(int) error { return nil }, func() (Row, error) { return Row{Wall: time.Second, Note: "link"}, nil })
	if err != nil || one.Note != "link" {
		t.Errorf("one run: %q, %v; want its row unchanged", one.Note, err)
	}
	boom := errors.New("exit 1")
	if _, err := firstZStreams(3, func(int) error { return nil }, func() (Row, error) { return Row{}, boom }); !errors.Is(err, boom) {
		t.Errorf("a failed run: %v, want its error", err)
	}
}
