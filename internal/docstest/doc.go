// Package docstest checks the README and the guides under docs/ against the
// repository: every relative link leads to a file (and heading) that
// exists, every Go program compiles, and every conduit name a Go block
// uses is exported by its package. It holds tests only.
package docstest
