package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Row is one line of the results table. Zero fields print as "–".
type Row struct {
	Name  string
	Input string
	// Wall is the elapsed time; WallText, when set, replaces it (ratios).
	Wall     time.Duration
	WallText string
	// RSS is the peak resident set size of the measured client process.
	RSS int64
	// CPU of the client; RegCPU of the registry processes during the run.
	CPU, RegCPU time.Duration
	// Throughput, e.g. "850 MB/s".
	Throughput string
	// Pulled and Pushed bytes as counted by the proxies (printed when Counted).
	Pulled, Pushed int64
	Counted        bool
	// Blobs sent (and mounted), requests to the source / destination.
	Blobs, Requests string
	// Target is the row's target (docs/benchmarks.md); Met is "yes", "NO" or "".
	Target, Met string
	Note        string
}

func na(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// Seconds formats a duration for the table.
func Seconds(d time.Duration) string {
	switch {
	case d == 0:
		return ""
	case d < time.Second:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	case d < 100*time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.0f s", d.Seconds())
}

// Bytes formats a byte count in decimal units (MB = 10^6 B), like the
// reference figures.
func Bytes(n int64) string {
	switch {
	case n < 0:
		return ""
	case n < 10_000:
		return fmt.Sprintf("%d B", n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	case n < 1_000_000_000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.2f GB", float64(n)/1e9)
}

// MiB formats a memory size in MiB (GiB above 10 GiB).
func MiB(n int64) string {
	if n <= 0 {
		return ""
	}
	if n >= 10<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}

// Rate formats bytes per duration in MB/s.
func Rate(n int64, d time.Duration) string {
	if n <= 0 || d <= 0 {
		return ""
	}
	return fmt.Sprintf("%.0f MB/s", float64(n)/1e6/d.Seconds())
}

func cpuText(r Row) string {
	switch {
	case r.CPU == 0 && r.RegCPU == 0:
		return ""
	case r.RegCPU == 0:
		return Seconds(r.CPU)
	}
	return Seconds(r.CPU) + " / " + Seconds(r.RegCPU)
}

func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// WriteTable writes rows as one Markdown table; a Row with only Name set is a
// section heading.
func WriteTable(w io.Writer, rows []Row) error {
	var b strings.Builder
	b.WriteString("| measurement | input | wall | peak RSS | CPU client / registries | throughput | pulled | pushed | blobs sent (mounted) | requests src / dst | target | met | notes |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|:-:|---|\n")
	for _, r := range rows {
		if r.Input == "" && r.Wall == 0 && r.WallText == "" && r.Note == "" && r.Target == "" {
			fmt.Fprintf(&b, "| **%s** | | | | | | | | | | | | |\n", escape(r.Name))
			continue
		}
		wall := r.WallText
		if wall == "" {
			wall = Seconds(r.Wall)
		}
		pulled, pushed := "", ""
		if r.Counted {
			pulled, pushed = Bytes(r.Pulled), Bytes(r.Pushed)
		}
		cells := []string{r.Name, r.Input, wall, MiB(r.RSS), cpuText(r), r.Throughput, pulled, pushed, r.Blobs, r.Requests, r.Target, r.Met, r.Note}
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + escape(na(c)) + " |")
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// heading returns a section-heading row.
func heading(s string) Row { return Row{Name: s} }

func met(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}
