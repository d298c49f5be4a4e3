package legacy

import _ "modernc.org/sqlite" // pure Go SQLite (see docs/benchmarks.md for the choice)

const driverName = "sqlite"
