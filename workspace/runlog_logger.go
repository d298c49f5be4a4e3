package workspace

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/airlock-mirror/airlock/internal/redact"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// OpenRunLog starts the log file of a command run on this working directory
// at start (NewRunLog, so the newest KeepLogs are kept) and returns a logger
// that writes what base writes, by base's level, and also into the file at
// info level (debug when base has it), every credential hidden (redact.Text,
// in the message and in every attribute). Its first line is msg with attrs
// and the file's name. An attribute named transfer.DetailKey (a failure's
// whole error, beside its short reason) goes to the file only. A log that cannot be opened is a warning on base, not
// a failure: base is returned. The returned function closes the file.
func (d Dir) OpenRunLog(base *slog.Logger, start time.Time, msg string, attrs ...any) (*slog.Logger, func()) {
	f, err := d.NewRunLog(start)
	if err != nil {
		base.Warn("no run log written", "error", err)
		return base, func() {}
	}
	lvl := slog.LevelInfo
	if base.Enabled(context.Background(), slog.LevelDebug) {
		lvl = slog.LevelDebug
	}
	file := slog.NewTextHandler(f, &slog.HandlerOptions{Level: lvl, ReplaceAttr: redactAttr})
	log := slog.New(teeHandler{base.Handler(), file})
	log.Info(msg, append(attrs, "log", f.Name())...)
	return log, func() { _ = f.Close() }
}

// redactAttr hides credentials in every string and error a log line holds.
func redactAttr(_ []string, a slog.Attr) slog.Attr {
	switch v := a.Value; v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(redact.Text(v.String()))
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			a.Value = slog.StringValue(redact.Text(err.Error()))
		} else if s, ok := v.Any().(interface{ String() string }); ok {
			a.Value = slog.StringValue(redact.Text(s.String()))
		}
	}
	return a
}

// teeHandler sends each record to both handlers (each by its own level).
type teeHandler struct{ a, b slog.Handler }

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return t.a.Enabled(ctx, l) || t.b.Enabled(ctx, l)
}

func (t teeHandler) Handle(ctx context.Context, rec slog.Record) error {
	var errs []error
	if t.a.Enabled(ctx, rec.Level) {
		errs = append(errs, t.a.Handle(ctx, withoutDetail(rec)))
	}
	if t.b.Enabled(ctx, rec.Level) {
		// The message too may hold what redactAttr hides in attributes.
		c := slog.NewRecord(rec.Time, rec.Level, redact.Text(rec.Message), rec.PC)
		rec.Attrs(func(a slog.Attr) bool { c.AddAttrs(a); return true })
		errs = append(errs, t.b.Handle(ctx, c))
	}
	return errors.Join(errs...)
}

// withoutDetail is rec without its transfer.DetailKey attribute: the
// console shows the short reason, the run log the detail.
func withoutDetail(rec slog.Record) slog.Record {
	c := slog.NewRecord(rec.Time, rec.Level, rec.Message, rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key != transfer.DetailKey {
			c.AddAttrs(a)
		}
		return true
	})
	return c
}

func (t teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return teeHandler{t.a.WithAttrs(as), t.b.WithAttrs(as)}
}

func (t teeHandler) WithGroup(name string) slog.Handler {
	return teeHandler{t.a.WithGroup(name), t.b.WithGroup(name)}
}
