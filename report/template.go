package report

import "html/template"

// page is the report. It must stay self-contained: inline style, one inline
// script (the pager of the long tables, allowed by its hash), data blocks,
// no external reference (the Content-Security-Policy forbids any). Without
// scripts it reads as it is: the long tables show their first page.
var page = template.Must(template.New("report").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src '{{.ScriptHash}}'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>airlock {{.Workflow}} report</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0 auto;max-width:1200px;padding:1em 2em;color:#212121;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #e0e0e0;padding-bottom:.2em;margin-top:1.6em}h3{margin-bottom:.3em}h4{margin:.8em 0 .3em}
table{border-collapse:collapse;margin:.4em 0 1em;font-size:.9em}th,td{border:1px solid #e0e0e0;padding:.25em .6em;text-align:left;vertical-align:top}
td code,td{overflow-wrap:anywhere}td.n{white-space:nowrap}
th{background:#f5f5f5}td.n{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace;font-size:.88em}pre{background:#f5f5f5;padding:.8em;overflow:auto;border-radius:4px}
.ok{color:#2e7d32}.bad{color:#c62828;font-weight:600}.muted{color:#757575}
.cards{display:flex;flex-wrap:wrap;gap:.8em;margin:1em 0}.card{border:1px solid #e0e0e0;border-radius:6px;padding:.5em 1em;min-width:8em}.card b{display:block;font-size:1.4em}
.graph{overflow:auto;border:1px solid #e0e0e0;border-radius:4px;padding:.4em;max-height:40em}.graph svg{max-width:none;height:auto}
details{margin:.4em 0}summary{cursor:pointer;font-weight:600}
.pager{margin:.6em 0 0;display:flex;gap:.6em;align-items:center;font-size:.9em}.pager input{width:22em;padding:.2em .4em}
</style>
</head>
<body>
<h1>airlock {{.Workflow}}</h1>
<p class="muted">Configuration <code>{{.ConfigPath}}</code>{{if .Destination}} · destination <code>{{.Destination}}</code>{{end}}</p>
<div class="cards">
<div class="card"><b>{{.Total}}</b>images</div>
<div class="card"><b class="{{if .Failed}}bad{{else}}ok{{end}}">{{.Failed}}</b>failed</div>
<div class="card"><b>{{bytes .BytesSent}}</b>sent ({{.BlobsSent}} blobs){{if .BytesResumed}}<br>{{bytes .BytesResumed}} of it resumed from an interrupted run, not fetched again{{end}}</div>
<div class="card"><b>{{.BlobsMounted}}</b>blobs mounted</div>
<div class="card"><b>{{.BlobsSkipped}}</b>blobs already there</div>
<div class="card"><b>{{dur .Duration}}</b>total time</div>
{{if or .Signed .Unsigned}}<div class="card"><b>{{.Signed}}</b>signed, <span{{if .Unsigned}} class="bad"{{end}}>{{.Unsigned}} unsigned</span></div>{{end}}
</div>
{{if .Error}}<p class="bad">The run ended with an error: {{.Error}}</p>{{end}}
{{if .Refused}}<p>The run was refused before it planned anything: nothing was copied, and report.html still shows the last run that did something.</p>{{end}}

<h2 id="failures">Failures</h2>
{{if .Failures.Rows}}{{template "long" .Failures}}{{else}}<p class="ok">Nothing failed.</p>{{end}}
{{if .Altered}}<h3 id="altered">Altered manifests the destination keeps</h3>
<p>The destination stored these manifest revisions altered on the way and refuses deletes: their tags were pushed again and name the right manifests, but these revisions stay readable by digest; {{.GC}}.</p>
<table><tr><th>repository</th><th>digest</th></tr>
{{range .Altered}}<tr><td><code>{{.Repository}}</code></td><td><code>{{.Digest}}</code></td></tr>
{{end}}</table>{{end}}
{{if .Sources}}<h3>Releases and other content</h3><ul>{{range .Sources}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
{{range .Pictures}}<h4>{{.Title}}</h4><div class="graph">{{svg .SVG}}</div>
{{end}}
{{if .Warnings}}<h3>Warnings</h3><ul>{{range .Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Blocked}}<h3>Blocked images (blockedImages)</h3><ul>{{range .Blocked}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}

<h2 id="stages">Timings per stage</h2>
<table><tr><th>stage</th><th>time</th></tr>
{{range .Stages}}<tr><td>{{.Name}}</td><td class="n">{{dur .Duration}}</td></tr>
{{end}}<tr><th>total</th><th class="n">{{dur .Duration}}</th></tr></table>

<h2 id="catalogs">Catalogs</h2>
{{range $ci, $c := .Catalogs}}<h3><code>{{.Source}}</code></h3>
<p>{{if .Full}}Mirrored whole (full catalog, not pruned).{{else if .Rebuilt}}Pruned and rebuilt.{{end}}
{{if .Destination}}Destination <code>{{.Destination}}</code>{{end}}{{if .Digest}} <span class="muted">{{.Digest}}</span>{{end}}</p>
{{range .Warnings}}<p class="muted">warning: {{.}}</p>{{end}}
{{if .Packages}}{{template "long" .Table}}{{end}}
{{range .Packages}}{{if .Section}}<h4 id="{{.Anchor}}">{{.Name}}{{if .Dependency}} (added as a dependency){{end}}</h4>
{{if .Graph}}<div class="graph">{{.Graph}}</div>{{end}}
{{if .Bundles}}<details{{if le (len .Bundles) 12}} open{{end}}><summary>{{len .Bundles}} bundle(s) kept, and why</summary>
<table><tr><th>bundle</th><th>version</th><th>why</th></tr>
{{range .Bundles}}<tr><td><code>{{.Name}}</code></td><td>{{.Version}}</td><td>{{range $i, $r := .Reasons}}{{if $i}}; {{end}}{{$r.String}}{{end}}</td></tr>
{{end}}</table></details>{{end}}
{{range .Dropped}}<p class="muted">dropped channel {{.Name}}: {{.Reason}}</p>{{end}}
{{end}}{{end}}{{else}}<p class="muted">No operator catalog.</p>{{end}}

{{if .Charts}}<h2 id="charts">Helm charts</h2>
<table><tr><th>repository</th><th>chart</th><th>version</th><th>artifact in the mirror</th><th>status</th><th>images</th></tr>
{{range .Charts}}<tr><td>{{.Repository}}</td><td>{{.Chart}}</td><td>{{.Version}}</td><td><code>{{short .Artifact}}</code></td><td{{if .Error}} class="bad"{{end}}>{{.Status}}{{if .Error}}: {{.Error}}{{end}}</td><td class="n">{{len .Images}}</td></tr>
{{end}}</table>
{{range .Charts}}{{if .Images}}<details><summary>{{.Repository}}/{{.Chart}} {{.Version}}: {{len .Images}} image(s), and where in the chart</summary>
<table><tr><th>image</th><th>destination</th><th>status</th><th>where in the chart</th></tr>
{{range .Images}}<tr><td><code>{{.Image}}</code></td><td><code>{{short .Destination}}</code></td><td{{if .Failed}} class="bad"{{end}}>{{.Status}}</td><td>{{range $i, $w := .Where}}{{if $i}}<br>{{end}}<code>{{$w}}</code>{{end}}</td></tr>
{{end}}</table></details>
{{end}}{{end}}{{end}}
<h2 id="repositories">Images and bytes per destination repository</h2>
{{template "long" .Repos}}

{{with .Archive}}<h2 id="archive">Archive</h2>
<p>Archive <code>{{.ID}}</code> in <code>{{.Dir}}</code>: {{.Blobs}} blobs, {{bytes .Bytes}}{{if .Incremental}}, incremental (relies on {{.ReliesOn}} earlier archive(s)){{end}}.</p>
<table><tr><th>chunk</th></tr>{{range .Chunks}}<tr><td><code>{{.}}</code></td></tr>{{end}}</table>{{end}}

<h2 id="images">Every image</h2>
<details><summary>{{.Total}} image(s)</summary>
{{template "long" .Every}}</details>

<h2 id="config">Configuration</h2>
<pre>{{.Config}}</pre>
<p class="muted">Written by airlock; regenerate with <code>airlock report DIR</code>.</p>
<script>{{.Script}}</script>
</body>
</html>
{{define "long"}}{{if .Paged}}<div class="pager" data-for="{{.ID}}" hidden><input type="search" placeholder="search the {{.Total}} {{.What}}" aria-label="search the {{.What}}"> <button type="button" data-step="-1">previous</button> <span>{{.Status}}</span> <button type="button" data-step="1">next</button></div>
{{end}}<table id="{{.ID}}" data-kinds="{{.KindsAttr}}"><thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead><tbody>
{{.Body}}</tbody></table>
{{if .Paged}}<p class="muted more">The first {{.Shown}} {{.What}} are shown; {{.More}} more are in <code>report.json</code> beside this page{{if .Also}} and in <code>{{.Also}}</code>{{end}} (with scripts on, the page shows them all).</p>
<script type="application/json" id="{{.ID}}-rows">{{.Data}}</script>
{{end}}{{end}}`))
