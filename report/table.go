package report

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"strconv"
	"strings"
)

// TableRows is how many rows of a list that grows with the run (failures,
// packages of a catalog, repositories, every image) the page lays out: the
// first page of the table. Every row is in the page too, as data beside the
// table (a JSON block, which the browser reads as text without building
// anything from it), and the page's one script pages through them and
// searches them. So the page's size grows with the run, but what the
// browser lays out when it opens the page does not: a 20,000-image run's
// page opens about as fast as a 1,000-image run's. Without scripts, the
// first page shows and a line under the table says how many more rows
// report.json holds.
const TableRows = 100

// longTable is a table whose rows grow with the run.
type longTable struct {
	// ID names the table on the page ("t-images"); the data block of its rows
	// is ID + "-rows".
	ID string
	// What the rows are, for the line under the table ("images").
	What string
	// Also names, besides report.json, where else every row is.
	Also string
	Head []string
	// Kinds says how each column shows: "code" (monospace), "n" (a number,
	// right-aligned) or "" (text).
	Kinds []string
	Rows  []tableRow
}

// tableRow is one row of a long table.
type tableRow struct {
	Cells []string
	// Bad marks cells shown as bad (bit i: cell i).
	Bad uint32
	// Link is where the first cell links to (an anchor of the page), Suffix
	// a muted note after it.
	Link, Suffix string
}

// MarshalJSON writes the row as its cells, followed by an object of what
// else it has ({"b": Bad, "h": Link, "s": Suffix}) when it has any: the
// script reads rows in this form.
func (r tableRow) MarshalJSON() ([]byte, error) {
	return r.appendJSON(nil), nil
}

// appendJSON appends the row as MarshalJSON writes it, byte for byte what
// encoding/json writes for the cells and the object (its keys sorted), with
// no reflection: the rows of a 20,000-image run went through json.Marshal
// of an []any each, then were checked and copied again by the encoder of
// the table (a tenth of a no-op re-run's CPU at that size).
func (r tableRow) appendJSON(b []byte) []byte {
	b = append(b, '[')
	for i, c := range r.Cells {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, c)
	}
	if r.Bad != 0 || r.Link != "" || r.Suffix != "" {
		if len(r.Cells) > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		sep := false
		field := func(key string) {
			if sep {
				b = append(b, ',')
			}
			sep = true
			b = append(b, '"')
			b = append(b, key...)
			b = append(b, '"', ':')
		}
		if r.Bad != 0 {
			field("b")
			b = strconv.AppendUint(b, uint64(r.Bad), 10)
		}
		if r.Link != "" {
			field("h")
			b = appendJSONString(b, r.Link)
		}
		if r.Suffix != "" {
			field("s")
			b = appendJSONString(b, r.Suffix)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendJSONString appends s as json.Marshal writes a string: quoted as is
// when every byte is printable ASCII that needs no escape (a reference, a
// digest, a number), else as json.Marshal writes it (escapes, <, > and &
// escaped, invalid UTF-8 replaced).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// Total is the number of rows; Paged whether the page holds more than it
// lays out; More how many rows the first page leaves out.
func (t *longTable) Total() int  { return len(t.Rows) }
func (t *longTable) Paged() bool { return len(t.Rows) > TableRows }
func (t *longTable) More() int   { return max(0, len(t.Rows)-TableRows) }

// Shown is how many rows the first page shows.
func (t *longTable) Shown() int { return min(len(t.Rows), TableRows) }

// KindsAttr is Kinds for the table's data-kinds attribute.
func (t *longTable) KindsAttr() string { return strings.Join(t.Kinds, ",") }

// Body is the first page of rows, as HTML.
func (t *longTable) Body() template.HTML {
	var b strings.Builder
	for _, r := range t.Rows[:t.Shown()] {
		b.WriteString("<tr>")
		for i, c := range r.Cells {
			var class []string
			if i < len(t.Kinds) && t.Kinds[i] == "n" {
				class = append(class, "n")
			}
			if r.Bad&(1<<i) != 0 {
				class = append(class, "bad")
			}
			b.WriteString("<td")
			if len(class) > 0 {
				b.WriteString(` class="` + strings.Join(class, " ") + `"`)
			}
			b.WriteString(">")
			text := template.HTMLEscapeString(c)
			switch {
			case i == 0 && r.Link != "":
				b.WriteString(`<a href="` + template.HTMLEscapeString(r.Link) + `">` + text + "</a>")
			case i < len(t.Kinds) && t.Kinds[i] == "code":
				b.WriteString("<code>" + text + "</code>")
			default:
				b.WriteString(text)
			}
			if i == 0 && r.Suffix != "" {
				b.WriteString(` <span class="muted">` + template.HTMLEscapeString(r.Suffix) + "</span>")
			}
			b.WriteString("</td>")
		}
		b.WriteString("</tr>\n")
	}
	return template.HTML(b.String()) // #nosec: every cell escaped above
}

// Data is every row as JSON, for the data block beside the table. The
// encoder escapes <, > and &, so no row can end the block.
func (t *longTable) Data() (template.JS, error) {
	if t.Rows == nil {
		return "null", nil
	}
	n := 2
	for _, r := range t.Rows {
		n += 4
		for _, c := range r.Cells {
			n += len(c) + 3
		}
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, r := range t.Rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = r.appendJSON(b)
	}
	b = append(b, ']')
	return template.JS(b), nil // #nosec: JSON with <, > and & escaped
}

// count writes n with thousands separators.
func count(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Status is the pager's first line: which rows show.
func (t *longTable) Status() string {
	return fmt.Sprintf("rows 1–%s of %s", count(t.Shown()), count(t.Total()))
}

// pagerScript pages through and searches the long tables: it reads a
// table's rows from its data block when asked for another page or a search,
// and lays out one page of them. It is the page's only script; the
// Content-Security-Policy allows it by its hash and nothing else.
var pagerScript = strings.Replace(pagerJS, "PAGE_SIZE", strconv.Itoa(TableRows), 1)

const pagerJS = `"use strict";
(() => {
  const size = PAGE_SIZE;
  for (const bar of document.querySelectorAll("div.pager[data-for]")) {
    const table = document.getElementById(bar.dataset.for);
    if (!table) continue;
    const kinds = table.dataset.kinds.split(","), body = table.tBodies[0];
    const search = bar.querySelector("input"), status = bar.querySelector("span");
    const prev = bar.querySelector("[data-step='-1']"), next = bar.querySelector("[data-step='1']");
    let all = null, texts = null, rows = null, page = 0, timer = 0;
    const load = () => {
      if (all === null) rows = all = JSON.parse(document.getElementById(bar.dataset.for + "-rows").textContent);
    };
    const tr = (r) => {
      const meta = r.length > kinds.length ? r[r.length - 1] : {};
      const row = document.createElement("tr");
      kinds.forEach((k, i) => {
        const td = row.insertCell();
        if (k === "n") td.classList.add("n");
        if (meta.b & (1 << i)) td.classList.add("bad");
        let el = td;
        if (i === 0 && meta.h) { el = document.createElement("a"); el.href = meta.h; td.append(el); }
        else if (k === "code") { el = document.createElement("code"); td.append(el); }
        el.textContent = r[i];
        if (i === 0 && meta.s) { const s = document.createElement("span"); s.className = "muted"; s.textContent = meta.s; td.append(" ", s); }
      });
      return row;
    };
    const show = () => {
      const pages = Math.max(1, Math.ceil(rows.length / size));
      page = Math.min(Math.max(page, 0), pages - 1);
      const out = document.createDocumentFragment();
      for (const r of rows.slice(page * size, (page + 1) * size)) out.append(tr(r));
      body.replaceChildren(out);
      const of = rows.length < all.length ? " matching, of " + all.length.toLocaleString("en-US") : "";
      status.textContent = rows.length === 0 ? "no row matches" :
        "rows " + (page * size + 1).toLocaleString("en-US") + "–" + Math.min(rows.length, (page + 1) * size).toLocaleString("en-US") +
        " of " + rows.length.toLocaleString("en-US") + of;
      prev.disabled = page === 0;
      next.disabled = page >= pages - 1;
    };
    bar.addEventListener("click", (e) => {
      const step = e.target.dataset ? Number(e.target.dataset.step) : 0;
      if (!step) return;
      load();
      page += step;
      show();
    });
    search.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        load();
        const q = search.value.trim().toLowerCase();
        if (q && texts === null) texts = all.map((r) => r.slice(0, kinds.length).join("\n").toLowerCase());
        rows = q ? all.filter((r, i) => texts[i].includes(q)) : all;
        page = 0;
        show();
      }, 150);
    });
    prev.disabled = true;
    bar.hidden = false;
    const more = table.nextElementSibling;
    if (more && more.classList.contains("more")) more.hidden = true;
  }
})();
`

// scriptHash is pagerScript's hash as the Content-Security-Policy names it.
var scriptHash = func() string {
	h := sha256.Sum256([]byte(pagerScript))
	return "sha256-" + base64.StdEncoding.EncodeToString(h[:])
}()
