package fbc

import (
	"encoding/base64"

	"github.com/airlock-mirror/airlock/fbc/internal/scan"
)

// The JSON encoders of Write: each appends one document (package, channel,
// bundle, deprecations) with its members in the order opm writes them.

func appendKey(b []byte, first bool, key string) []byte {
	if !first {
		b = append(b, ',')
	}
	b = scan.AppendString(b, key)
	return append(b, ':')
}

func appendPackage(b []byte, p *Package) []byte {
	b = append(b, '{')
	b = appendKey(b, true, "schema")
	b = scan.AppendString(b, SchemaPackage)
	b = appendKey(b, false, "name")
	b = scan.AppendString(b, p.Name)
	b = appendKey(b, false, "defaultChannel")
	b = scan.AppendString(b, p.DefaultChannel)
	if p.Icon != nil {
		b = appendKey(b, false, "icon")
		b = append(b, '{')
		b = appendKey(b, true, "base64data")
		if p.Icon.Data == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, p.Icon.Data)
			b = append(b, '"')
		}
		b = appendKey(b, false, "mediatype")
		b = scan.AppendString(b, p.Icon.MediaType)
		b = append(b, '}')
	}
	if p.Description != "" {
		b = appendKey(b, false, "description")
		b = scan.AppendString(b, p.Description)
	}
	if len(p.Properties) > 0 {
		b = appendKey(b, false, "properties")
		b = appendProperties(b, p.Properties)
	}
	return append(b, '}')
}

func appendProperties(b []byte, props []Property) []byte {
	b = append(b, '[')
	for i, pr := range props {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		b = appendKey(b, true, "type")
		b = scan.AppendString(b, pr.Type)
		if pr.Value != nil {
			// As it is: emit, which every document goes through,
			// drops insignificant space while formatting.
			b = appendKey(b, false, "value")
			b = append(b, pr.Value...)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendChannel(b []byte, ch *Channel) []byte {
	b = append(b, '{')
	b = appendKey(b, true, "schema")
	b = scan.AppendString(b, SchemaChannel)
	b = appendKey(b, false, "name")
	b = scan.AppendString(b, ch.Name)
	b = appendKey(b, false, "package")
	b = scan.AppendString(b, ch.Package)
	b = appendKey(b, false, "entries")
	if ch.Entries == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, e := range ch.Entries {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			b = appendKey(b, true, "name")
			b = scan.AppendString(b, e.Name)
			if e.Replaces != "" {
				b = appendKey(b, false, "replaces")
				b = scan.AppendString(b, e.Replaces)
			}
			if len(e.Skips) > 0 {
				b = appendKey(b, false, "skips")
				b = append(b, '[')
				for k, s := range e.Skips {
					if k > 0 {
						b = append(b, ',')
					}
					b = scan.AppendString(b, s)
				}
				b = append(b, ']')
			}
			if e.SkipRange != "" {
				b = appendKey(b, false, "skipRange")
				b = scan.AppendString(b, e.SkipRange)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(ch.Properties) > 0 {
		b = appendKey(b, false, "properties")
		b = appendProperties(b, ch.Properties)
	}
	return append(b, '}')
}

func appendBundle(b []byte, bd *Bundle, props []Property) []byte {
	b = append(b, '{')
	b = appendKey(b, true, "schema")
	b = scan.AppendString(b, SchemaBundle)
	b = appendKey(b, false, "name")
	b = scan.AppendString(b, bd.Name)
	b = appendKey(b, false, "package")
	b = scan.AppendString(b, bd.Package)
	b = appendKey(b, false, "image")
	b = scan.AppendString(b, bd.Image)
	if len(props) > 0 {
		b = appendKey(b, false, "properties")
		b = appendProperties(b, props)
	}
	if len(bd.RelatedImages) > 0 {
		b = appendKey(b, false, "relatedImages")
		b = append(b, '[')
		for i, ri := range bd.RelatedImages {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			b = appendKey(b, true, "name")
			b = scan.AppendString(b, ri.Name)
			b = appendKey(b, false, "image")
			b = scan.AppendString(b, ri.Image)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func appendDeprecations(b []byte, d *Deprecations) []byte {
	b = append(b, '{')
	b = appendKey(b, true, "schema")
	b = scan.AppendString(b, SchemaDeprecations)
	b = appendKey(b, false, "package")
	b = scan.AppendString(b, d.Package)
	b = appendKey(b, false, "entries")
	if d.Entries == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, e := range d.Entries {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			b = appendKey(b, true, "reference")
			b = append(b, '{')
			b = appendKey(b, true, "schema")
			b = scan.AppendString(b, e.Reference.Schema)
			if e.Reference.Name != "" {
				b = appendKey(b, false, "name")
				b = scan.AppendString(b, e.Reference.Name)
			}
			b = append(b, '}')
			b = appendKey(b, false, "message")
			b = scan.AppendString(b, e.Message)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}
