package bench

import (
	"bufio"
	"context"
	"strings"
	"time"
)

// holdNoop runs the no-op re-run once for every line of cfg.ScaleHold (an
// airlock binary, empty for cfg.Airlock, then extra flags), after a warm-up
// run when the binary is not the previous line's, and logs its
// wall, CPU, the registries' CPU and the destination's requests, until the
// input ends or ctx is done. run runs the re-run with a binary and says the
// registries' CPU and the destination's requests of that run.
func holdNoop(ctx context.Context, cfg Config, run func(bin string, extra ...string) (Measure, time.Duration, Counts, error)) {
	cfg.Log.Info("holding the registries: one no-op re-run per line of standard input (an airlock binary, then extra flags)")
	lines := make(chan string)
	last := cfg.Airlock // the binary whose memos the workspace holds
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(cfg.ScaleHold)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	for {
		var line string
		var ok bool
		select {
		case <-ctx.Done():
			return
		case line, ok = <-lines:
			if !ok {
				return
			}
		}
		f := strings.Fields(line)
		bin := cfg.Airlock
		if len(f) > 0 {
			bin, f = f[0], f[1:]
		}
		if bin != last {
			// A catalog's memo is keyed by the build that pruned it: the
			// first run of another binary prunes every catalog again and
			// records its own memos (1.5 to 2.5 s more at 20,000 images).
			// Alternated binaries without this warm-up each measured that.
			if _, _, _, err := run(bin, f...); err != nil {
				cfg.Log.Error("held no-op re-run, warm-up", "bin", bin, "err", err)
				continue
			}
			cfg.Log.Info("held no-op re-run, warm-up done (a new build prunes the catalogs again)", "bin", bin)
			last = bin
		}
		m, reg, c, err := run(bin, f...)
		if err != nil {
			cfg.Log.Error("held no-op re-run", "bin", bin, "err", err)
			continue
		}
		cfg.Log.Info("held no-op re-run", "bin", bin, "extra", strings.Join(f, " "), "wall", m.Wall.Round(time.Millisecond),
			"cpu", m.CPU().Round(time.Millisecond), "user", m.User.Round(time.Millisecond), "sys", m.Sys.Round(time.Millisecond),
			"rss_mib", m.MaxRSS>>20, "registries_cpu", reg.Round(time.Millisecond), "dst_requests", c.Requests, "kinds", requestKinds(c))
	}
}
