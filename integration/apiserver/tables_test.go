package apiserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

// TestTables: server-side printing for lists and for watches (kubectl
// get and get -w), with the rows' objects as metadata by default.
func TestTables(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, shared)
	cs := shared.Client(t)
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, testPod("tbl"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	raw := cs.CoreV1().RESTClient()
	body, err := raw.Get().Namespace(ns).Resource("pods").SetHeader("Accept", tableAccept).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if len(cols) < 5 || cols[0] != "Name" || cols[1] != "Ready" || cols[2] != "Status" || cols[3] != "Restarts" || cols[4] != "Age" {
		t.Fatalf("pod table columns %v, want Name Ready Status Restarts Age ...", cols)
	}
	if len(table.Rows) != 1 || table.Rows[0].Cells[0] != "tbl" || table.ResourceVersion == "" {
		t.Fatalf("rows %+v resourceVersion %q", table.Rows, table.ResourceVersion)
	}
	var meta metav1.PartialObjectMetadata
	if err := json.Unmarshal(table.Rows[0].Object.Raw, &meta); err != nil || meta.Kind != "PartialObjectMetadata" || meta.Labels["app"] != "t" {
		t.Fatalf("row object %s: %v", table.Rows[0].Object.Raw, err)
	}

	// Watch as tables: each event carries a one-row table.
	cfg := shared.RESTConfig(t)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/api/v1/namespaces/"+ns+"/pods?watch=true&resourceVersion="+table.ResourceVersion, nil)
	req.Header.Set("Accept", tableAccept)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, testPod("tbl2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Type   string
		Object metav1.Table
	}
	if err := json.Unmarshal(line, &ev); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	if ev.Type != "ADDED" || ev.Object.Kind != "Table" || len(ev.Object.Rows) != 1 || ev.Object.Rows[0].Cells[0] != "tbl2" {
		t.Fatalf("table watch event: %s", line)
	}
}
