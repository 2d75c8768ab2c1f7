// Package version holds the build's version, set by the linker:
//
//	go build -ldflags "-X github.com/svc-gateway/svc/internal/version.Version=v1.2.3"
package version

// Version is the running build's version; "dev" for a plain go build.
var Version = "dev"
