package openapi

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestRequiredMarkersMatchSources reads the Go sources of every type in the
// documents and applies upstream's rule for required fields (+required,
// +optional, else no omitempty) to each field, then checks the document
// says the same. The markers live in comments, which reflection cannot see;
// a failure prints the entries markers.go needs.
func TestRequiredMarkersMatchSources(t *testing.T) {
	b, err := build(DefaultResources(), Info{})
	if err != nil {
		t.Fatal(err)
	}
	structs := map[string]map[string]*ast.StructType{} // package path → type name → struct
	load := func(pkg string) map[string]*ast.StructType {
		if m, ok := structs[pkg]; ok {
			return m
		}
		out, err := exec.Command("go", "list", "-f", "{{.Dir}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		pkgs, err := parser.ParseDir(token.NewFileSet(), strings.TrimSpace(string(out)), nil, parser.ParseComments)
		if err != nil {
			t.Fatalf("parsing %s: %v", pkg, err)
		}
		m := map[string]*ast.StructType{}
		for _, p := range pkgs {
			for _, f := range p.Files {
				ast.Inspect(f, func(n ast.Node) bool {
					if ts, ok := n.(*ast.TypeSpec); ok {
						if st, ok := ts.Type.(*ast.StructType); ok {
							m[ts.Name.Name] = st
						}
					}
					return true
				})
			}
		}
		structs[pkg] = m
		return m
	}

	var wantOptional, wantRequired []string
	checked := 0
	var visit func(rt reflect.Type)
	seen := map[reflect.Type]bool{}
	visit = func(rt reflect.Type) {
		if seen[rt] || rt.Kind() != reflect.Struct {
			return
		}
		seen[rt] = true
		st := load(rt.PkgPath())[rt.Name()]
		if st == nil {
			t.Errorf("no source for %s", rt)
			return
		}
		for _, field := range st.Fields.List {
			if field.Tag == nil || len(field.Names) == 0 {
				continue // embedded: its own type is visited through its definition or inlining below
			}
			tag := reflect.StructTag(strings.Trim(field.Tag.Value, "`"))
			name, opts, _ := strings.Cut(tag.Get("json"), ",")
			if name == "" || name == "-" || strings.Contains(opts, "inline") {
				continue
			}
			markers := map[string]bool{}
			if field.Doc != nil {
				for _, c := range field.Doc.List {
					line := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
					for _, m := range []string{"+optional", "+required"} {
						if line == m || strings.HasPrefix(line, m+"=") || strings.HasPrefix(line, m+" ") {
							markers[m] = true
						}
					}
				}
			}
			omitempty := slices.Contains(strings.Split(opts, ","), "omitempty")
			upstreamRequired := markers["+required"] || (!markers["+optional"] && !omitempty)
			key := modelName(rt) + "." + name
			if got := isRequired(key, strings.Split(opts, ",")); got != upstreamRequired {
				if upstreamRequired {
					wantRequired = append(wantRequired, key)
				} else {
					wantOptional = append(wantOptional, key)
				}
			}
			checked++
		}
		for i := 0; i < rt.NumField(); i++ {
			if f := rt.Field(i); f.Anonymous || strings.Contains(f.Tag.Get("json"), "inline") {
				ft := f.Type
				for ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				visit(ft)
			}
		}
	}
	for _, rt := range b.types {
		visit(rt)
	}
	if checked < 1000 {
		t.Errorf("checked only %d fields; the source walk is broken", checked)
	}
	if len(wantOptional)+len(wantRequired) > 0 {
		slices.Sort(wantOptional)
		slices.Sort(wantRequired)
		var sb strings.Builder
		sb.WriteString("markers.go is stale; it needs:\nmarkedOptional:\n")
		for _, k := range wantOptional {
			fmt.Fprintf(&sb, "\t%q: true,\n", k)
		}
		sb.WriteString("markedRequired:\n")
		for _, k := range wantRequired {
			fmt.Fprintf(&sb, "\t%q: true,\n", k)
		}
		t.Error(sb.String())
	}
}
