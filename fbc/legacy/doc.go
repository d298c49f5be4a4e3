// Package legacy converts the catalog formats that came before file-based
// catalogs into file-based catalogs, with the semantics of opm v1.73 (the last
// release that read them):
//
//   - a SQLite index database (the file an `opm index add` image holds at the path
//     of its label operators.operatorframework.io.index.database.v1), as
//     `opm render`/`opm migrate` do through sqlite.ToModel and declcfg;
//   - a package-manifest folder (<package>/<version>/*.clusterserviceversion.yaml
//     and a *.package.yaml), as opm's directory loader filled a database that
//     `opm migrate` then converted (ConvertManifests builds the same tables in
//     memory and converts them with the same code);
//
// The result is written to a folder as `opm migrate` writes it (one
// <package>/catalog.json per package), which fbc loads like any catalog. The
// input is never trusted: the database is opened read-only and immutable, every
// value is checked, and a damaged or crafted file gets an error naming the table,
// row and what is wrong, never a panic. The package knows nothing of registries.
package legacy
