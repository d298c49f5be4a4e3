package bench

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
)

// Every run of the harness is kept as data: its header and full table, as
// printed, in a file of the results folder (bench/results) named by its start
// time. docs/benchmarks.md shows one current table per section, each the
// section's rows from the latest run that measured it, between two markers
// that the harness rewrites after each run (CurrentTables); what lies
// outside them is prose, left alone. A section is what sectionKey names: a
// workload measured again with other sizes (the scale section at other
// numbers of images, a catalog-scale preset grown) replaces its table, and
// the earlier table leaves the page; its run stays in bench/results,
// linked from docs/benchmarks-history.md (TestEveryRunIsLinked).

// The markers around the generated part of docs/benchmarks.md.
const (
	beginCurrent = "<!-- BEGIN current tables: written by airlock-bench from bench/results; do not edit -->"
	endCurrent   = "<!-- END current tables -->"
)

// runFileTime names a run's file: sortable, one a minute (a second run in
// the same minute gets a letter: "…-1504b.md" sorts after "…-1504.md").
const runFileTime = "2006-01-02-1504"

// RecordRun writes run (a header and a table, as printed) into dir as a new
// file named by start, and returns its path.
func RecordRun(dir string, start time.Time, run string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	base := start.UTC().Format(runFileTime)
	path := filepath.Join(dir, base+".md")
	for c := 'b'; ; c++ {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			break
		} else if err != nil || c > 'z' {
			return "", fmt.Errorf("no free name for the run of %s in %s: %v", base, dir, err)
		}
		path = filepath.Join(dir, fmt.Sprintf("%s%c.md", base, c))
	}
	return path, atomicfile.WriteFile(path, []byte(run), 0o644)
}

// section is one section of a run's table: its heading row and the rows
// under it.
type section struct {
	key, heading string
	rows         []string
}

// parsedRun is a run file read back.
type parsedRun struct {
	file, title string
	about       []string // the header's bullet lines (machine, commit, workloads)
	sections    []section
}

var runTitle = regexp.MustCompile(`^### (\d{4}-\d\d-\d\d \d\d:\d\d UTC): `)

// parseRun reads a run file: its "### DATE: … run" title, bullets and table,
// split into sections at its bold heading rows.
func parseRun(path string) (parsedRun, error) {
	f, err := os.Open(path)
	if err != nil {
		return parsedRun{}, err
	}
	defer f.Close()
	r := parsedRun{file: path}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var cur *section
	copyWorkload := ""
	inTable := false // in a table of the harness (other tables are prose)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case r.title == "" && runTitle.MatchString(l):
			r.title = strings.TrimPrefix(l, "### ")
		case strings.HasPrefix(l, "| measurement | input | wall |"):
			inTable = true
		case !strings.HasPrefix(l, "|"):
			inTable = false
			if strings.HasPrefix(l, "- ") && len(r.sections) == 0 {
				r.about = append(r.about, l)
			}
		case !inTable || strings.HasPrefix(l, "|---"):
		case strings.HasPrefix(l, "| **"):
			h := strings.TrimSuffix(strings.TrimPrefix(strings.SplitN(l, "|", 3)[1], " **"), "** ")
			key := sectionKey(h)
			if strings.HasPrefix(key, "copy: ") && strings.HasSuffix(key, " workload") {
				copyWorkload = key
			} else if strings.HasPrefix(key, "copy: ") && copyWorkload != "" {
				key = copyWorkload + ", " + strings.TrimPrefix(key, "copy: ")
			}
			if p := r.catalogPreset(); strings.HasPrefix(key, "catalog scale: ") && p != "" {
				key = "catalog scale: " + p + " workload"
			}
			if i := slices.IndexFunc(r.sections, func(s section) bool { return s.key == key }); i >= 0 {
				// Another part of the same section (the scale section's
				// next size): its heading row goes into the one table.
				cur = &r.sections[i]
				cur.rows = append(cur.rows, l)
				continue
			}
			r.sections = append(r.sections, section{key: key, heading: l})
			cur = &r.sections[len(r.sections)-1]
		case cur == nil:
			return r, fmt.Errorf("%s:%d: a table row before any section heading row (| **…** |)", path, n)
		default:
			cur.rows = append(cur.rows, l)
		}
	}
	if err := sc.Err(); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	if r.title == "" {
		return r, fmt.Errorf("%s: no \"### YYYY-MM-DD HH:MM UTC: … run\" title: not a run of airlock-bench", path)
	}
	return r, nil
}

// catalogPresetBullet is the header line naming the catalog-scale
// section's workload preset.
var catalogPresetBullet = regexp.MustCompile(`^- catalog scale: workload (\S+) over `)

// catalogPreset is the catalog-scale workload preset the run names in its
// header ("catalog", "catalog-small-images"), or "".
func (r *parsedRun) catalogPreset() string {
	for _, a := range r.about {
		if m := catalogPresetBullet.FindStringSubmatch(a); m != nil {
			return m[1]
		}
	}
	return ""
}

// scaleSizeHeading is a heading row of one size of the scale section.
var scaleSizeHeading = regexp.MustCompile(`^scale: \d+ images\b`)

// sectionKey names what a heading row measures, the same from run to run
// however the sizes in it change: the heading up to its first ";" or " (",
// and at most its first two ":"-separated parts ("copy: reference workload:
// 132 tags…" is "copy: reference workload"); the Go benchmarks are one
// section, and so are the scale section's sizes ("scale: 1157 images…",
// "scale: 20157 images…": "scale"), whatever sizes a run measured. Within
// a run, parseRun names a catalog-scale section by its workload preset.
func sectionKey(h string) string {
	if strings.HasPrefix(h, "go test ") {
		return "go benchmarks"
	}
	if scaleSizeHeading.MatchString(h) {
		return "scale"
	}
	if i := strings.IndexAny(h, ";"); i >= 0 {
		h = h[:i]
	}
	if i := strings.Index(h, " ("); i >= 0 {
		h = h[:i]
	}
	if parts := strings.SplitN(h, ":", 3); len(parts) == 3 {
		h = parts[0] + ":" + parts[1]
	}
	return strings.TrimSpace(h)
}

// CurrentTables renders, from the run files in dir, one table per section:
// the section's rows from the latest run that has it, with that run's date,
// commit and file (linked relative to docDir, the folder of the document).
func CurrentTables(dir, docDir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		return "", err
	}
	slices.Sort(files) // named by start time: later runs sort later
	if abs, err := filepath.Abs(docDir); err == nil {
		docDir = abs
	}
	latest := map[string]section{}
	from := map[string]parsedRun{}
	var order []string
	for _, f := range files {
		if filepath.Base(f) == "README.md" {
			continue
		}
		r, err := parseRun(f)
		if err != nil {
			return "", err
		}
		for _, s := range r.sections {
			if _, ok := latest[s.key]; !ok {
				order = append(order, s.key)
			}
			latest[s.key], from[s.key] = s, r
		}
	}
	slices.SortStableFunc(order, func(a, b string) int { return sectionRank(a) - sectionRank(b) })
	var b strings.Builder
	b.WriteString(beginCurrent + "\n")
	for _, k := range order {
		s, r := latest[k], from[k]
		file := r.file
		if abs, err := filepath.Abs(file); err == nil {
			file = abs
		}
		link, err := filepath.Rel(docDir, file)
		if err != nil {
			link = file
		}
		fmt.Fprintf(&b, "\n### %s\n\n%s\n", k, fromLine(r.title, filepath.ToSlash(link)))
		for _, a := range r.about {
			if strings.HasPrefix(a, "- machine:") || strings.HasPrefix(a, "- airlock ") {
				b.WriteString(a + "\n")
			}
		}
		b.WriteString("\n| measurement | input | wall | peak RSS | CPU client / registries | throughput | pulled | pushed | blobs sent (mounted) | requests src / dst | target | met | notes |\n")
		b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|:-:|---|\n")
		b.WriteString(s.heading + "\n")
		for _, row := range s.rows {
			b.WriteString(row + "\n")
		}
	}
	b.WriteString("\n" + endCurrent + "\n")
	return b.String(), nil
}

// runTitleParts splits a run's title: "DATE: KIND run (NOTE)".
var runTitleParts = regexp.MustCompile(`^(\d{4}-\d\d-\d\d \d\d:\d\d UTC): (\w+) run(?: \((.*)\))?$`)

// fromLine says which run a current table comes from: its date and kind,
// a link to its full table, and the note the run was labelled with (what
// that run was about, which may be another section than this one).
func fromLine(title, link string) string {
	m := runTitleParts.FindStringSubmatch(title)
	if m == nil {
		return fmt.Sprintf("From the %s ([full table](%s)).", title, link)
	}
	s := fmt.Sprintf("From the %s run of %s ([full table](%s))", m[2], m[1], link)
	if m[3] != "" {
		s += "; the run's note: " + m[3]
	}
	return s + "."
}

// sectionRank orders the current tables as the harness runs its sections.
func sectionRank(key string) int {
	for i, p := range []string{"catalog:", "copy:", "catalog scale", "release", "scale", "whole pipeline", "go benchmarks"} {
		if strings.HasPrefix(strings.ToLower(key), p) {
			return i
		}
	}
	return 7
}

// UpdateDoc rewrites the current tables of the document at doc from the run
// files in dir. A document without the markers gets them, with the tables,
// at its end.
func UpdateDoc(doc, dir string) error {
	old, err := os.ReadFile(doc)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	tables, err := CurrentTables(dir, filepath.Dir(doc))
	if err != nil {
		return err
	}
	s := string(old)
	i, j := strings.Index(s, beginCurrent), strings.Index(s, endCurrent)
	switch {
	case i >= 0 && j > i:
		s = s[:i] + tables + strings.TrimPrefix(s[j+len(endCurrent):], "\n")
	case i >= 0 || j >= 0:
		return fmt.Errorf("%s: one of the markers %q and %q is missing or they are out of order: put both back, or neither", doc, beginCurrent, endCurrent)
	default:
		if s != "" && !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		s += "\n" + tables
	}
	return atomicfile.WriteFile(doc, []byte(s), 0o644)
}
