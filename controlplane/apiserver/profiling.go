package apiserver

import (
	"net/http"
	"net/http/pprof"
	"strings"
)

// profilingPath is where Config.Profiling serves net/http/pprof.
const profilingPath = "/debug/pprof"

// isProfilingPath reports whether p is /debug/pprof or below it.
func isProfilingPath(p string) bool {
	return p == profilingPath || strings.HasPrefix(p, profilingPath+"/")
}

// profilingHandler serves the Go runtime's profiles as kube-apiserver's
// --profiling does: the index and every named profile (heap, goroutine,
// allocs, block, mutex, threadcreate), a CPU profile, symbol lookup and an
// execution trace. The command line is not served (it may hold secrets).
// Callers reach it only through authentication and authorization of the
// non-resource path.
func profilingHandler() http.Handler {
	m := http.NewServeMux()
	m.Handle(profilingPath, http.RedirectHandler(profilingPath+"/", http.StatusFound))
	m.HandleFunc(profilingPath+"/", pprof.Index)
	m.HandleFunc(profilingPath+"/profile", pprof.Profile)
	m.HandleFunc(profilingPath+"/symbol", pprof.Symbol)
	m.HandleFunc(profilingPath+"/trace", pprof.Trace)
	return m
}
