package fbc

import (
	"fmt"
	"strings"

	"github.com/airlock-mirror/airlock/fbc/internal/scan"
)

func decodeEntries(v []byte) ([]ChannelEntry, error) {
	if ok, err := expect(v, '['); !ok {
		return nil, err
	}
	entries := []ChannelEntry{}
	err := scan.EachElement(v, func(n int, el []byte) error {
		var e ChannelEntry
		if ok, err := expect(el, '{'); !ok {
			if err != nil {
				return fmt.Errorf("entries[%d]: %w", n, err)
			}
			entries = append(entries, e)
			return nil
		}
		err := scan.EachMember(el, func(key string, fv []byte) error {
			var err error
			switch {
			case strings.EqualFold(key, "name"):
				e.Name, err = str(fv)
			case strings.EqualFold(key, "replaces"):
				e.Replaces, err = str(fv)
			case strings.EqualFold(key, "skipRange"):
				e.SkipRange, err = str(fv)
			case strings.EqualFold(key, "skips"):
				e.Skips, err = stringList(fv)
			}
			if err != nil {
				return fmt.Errorf("entries[%d].%s: %w", n, key, err)
			}
			return nil
		})
		entries = append(entries, e)
		return err
	})
	return entries, err
}

func stringList(v []byte) ([]string, error) {
	if ok, err := expect(v, '['); !ok {
		return nil, err
	}
	out := []string{}
	err := scan.EachElement(v, func(n int, el []byte) error {
		s, err := str(el)
		if err != nil {
			return fmt.Errorf("[%d]: %w", n, err)
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

func decodeRelatedImages(v []byte) ([]RelatedImage, error) {
	if ok, err := expect(v, '['); !ok {
		return nil, err
	}
	out := []RelatedImage{}
	err := scan.EachElement(v, func(n int, el []byte) error {
		var ri RelatedImage
		if ok, err := expect(el, '{'); !ok {
			if err != nil {
				return fmt.Errorf("relatedImages[%d]: %w", n, err)
			}
			out = append(out, ri)
			return nil
		}
		err := scan.EachMember(el, func(key string, fv []byte) error {
			var err error
			switch {
			case strings.EqualFold(key, "name"):
				ri.Name, err = str(fv)
			case strings.EqualFold(key, "image"):
				ri.Image, err = str(fv)
			}
			if err != nil {
				return fmt.Errorf("relatedImages[%d].%s: %w", n, key, err)
			}
			return nil
		})
		out = append(out, ri)
		return err
	})
	return out, err
}

func decodeDeprecationEntries(v []byte) ([]DeprecationEntry, error) {
	if ok, err := expect(v, '['); !ok {
		return nil, err
	}
	out := []DeprecationEntry{}
	err := scan.EachElement(v, func(n int, el []byte) error {
		var de DeprecationEntry
		if ok, err := expect(el, '{'); !ok {
			if err != nil {
				return fmt.Errorf("entries[%d]: %w", n, err)
			}
			out = append(out, de)
			return nil
		}
		err := scan.EachMember(el, func(key string, fv []byte) error {
			var err error
			switch {
			case strings.EqualFold(key, "message"):
				de.Message, err = str(fv)
			case strings.EqualFold(key, "reference"):
				var ok bool
				if ok, err = expect(fv, '{'); ok {
					err = scan.EachMember(fv, func(k string, rv []byte) error {
						var err error
						switch {
						case strings.EqualFold(k, "schema"):
							de.Reference.Schema, err = str(rv)
						case strings.EqualFold(k, "name"):
							de.Reference.Name, err = str(rv)
						}
						if err != nil {
							return fmt.Errorf("%s: %w", k, err)
						}
						return nil
					})
				}
			}
			if err != nil {
				return fmt.Errorf("entries[%d].%s: %w", n, key, err)
			}
			return nil
		})
		out = append(out, de)
		return err
	})
	return out, err
}
