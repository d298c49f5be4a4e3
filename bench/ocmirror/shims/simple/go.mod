module github.com/microlib/simple

go 1.22
