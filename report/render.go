package report

import (
	"bytes"

	"golang.org/x/sync/errgroup"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
	"github.com/airlock-mirror/airlock/internal/jsonindent"
)

// Rendered is a run's report made and not written yet: its data (the JSON of
// report.json) and its page (report.html). A caller renders while other
// records are written, and saves once it knows the run's outcome.
type Rendered struct {
	run        *Run
	data, page []byte
}

// Render sorts r and makes its data and its page, the two at once (each is
// about half the work, and neither changes r).
func Render(r *Run) (*Rendered, error) {
	r.Sort()
	var page bytes.Buffer
	var g errgroup.Group
	g.Go(func() error { return Write(&page, r) })
	b, err := jsonindent.Marshal(r, "  ")
	if werr := g.Wait(); err == nil {
		err = werr
	}
	if err != nil {
		return nil, err
	}
	return &Rendered{run: r, data: append(b, '\n'), page: page.Bytes()}, nil
}

// Save writes the report to each of files, every file replaced atomically
// (a reader sees either the old report or the new one), the files at once.
func (x *Rendered) Save(files ...Files) error {
	var g errgroup.Group
	for _, f := range files {
		g.Go(func() error { return atomicfile.WriteFile(f.Data, x.data, 0) })
		g.Go(func() error { return atomicfile.WriteFile(f.HTML, x.page, 0) })
	}
	return g.Wait()
}

// SaveRun writes the report as the run's own (own) and as the last report
// (last), unless the run was refused and last holds a run that was not: a
// refused run never hides the last run that did something.
func (x *Rendered) SaveRun(own, last Files) error {
	files := []Files{own}
	if replaces(x.run, last.Data) {
		files = append(files, last)
	}
	return x.Save(files...)
}
