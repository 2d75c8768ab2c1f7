// Package web holds the dashboard's files, embedded into the svc binary so
// that one file is the whole service.
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var static embed.FS

// FS is the dashboard's file tree, rooted at its index.html.
var FS = mustSub(static, "static")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return sub
}
