package prune

import (
	"context"
	"io"
	"testing"
)

func BenchmarkZZV421(b *testing.B) {
	dir := realCatalogRoot(b, realCatalogs[0])
	ctx := context.Background()
	b.Run("load", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_, err := LoadDir(ctx, dir, LoadOptions{ElideHeavy: true, Concurrency: 1})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	c, _ := LoadDir(ctx, dir, LoadOptions{ElideHeavy: true, Concurrency: 1})
	b.Run("validate", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_ = Validate(c)
		}
	})
	b.Run("render", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := Render(ctx, c, io.Discard, "json"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("loadjson", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_, err := LoadDir(ctx, "/tmp/i18/v421json", LoadOptions{ElideHeavy: true, Concurrency: 1})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
