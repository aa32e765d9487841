// The shared main of the releases whose hack/kubectl/1.XX has none: build.sh
// builds it with -modfile 1.XX/go.mod, which sets its requirements. This
// file only marks the module root (go build -modfile needs one).
module berth/hack/kubectl/main

go 1.26.8
