// Command junitsummary prints the JUnit report of an e2e.test run as a table
// per SIG (specs, passed, failed, skipped) and lists every failed spec with
// the first line of its failure message. Specs the focus did not select
// (reported as skipped with no message) are left out when -focus/-skip are
// given, so the table counts what was asked for. It exits 1 when a spec
// failed, 0 otherwise.
//
//	junitsummary [-focus RE] [-skip RE] [-failures FILE] junit_01.xml
package main

import (
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"
)

type testcase struct {
	Name    string  `xml:"name,attr"`
	Status  string  `xml:"status,attr"`
	Time    float64 `xml:"time,attr"`
	Failure *struct {
		Message string `xml:"message,attr"`
		Body    string `xml:",chardata"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
		Body    string `xml:",chardata"`
	} `xml:"error"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
}

type report struct {
	Suites []struct {
		Cases []testcase `xml:"testcase"`
	} `xml:"testsuite"`
	Cases []testcase `xml:"testcase"` // a bare <testsuite> root
}

var sigRE = regexp.MustCompile(`\[sig-[a-z0-9-]+\]`)

// counts is one row of the table.
type counts struct{ specs, passed, failed, skipped int }

func main() {
	focus := flag.String("focus", "", "regexp the run was focused on: skipped specs it does not select are not counted")
	skip := flag.String("skip", "", "regexp the run skipped: specs it selects are not counted")
	failures := flag.String("failures", "", "also write the failures, one spec and its message per line, to this file")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: junitsummary [-focus RE] [-skip RE] [-failures FILE] JUNIT.xml")
		os.Exit(2)
	}
	code, err := run(flag.Arg(0), *focus, *skip, *failures, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "junitsummary:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func run(path, focus, skip, failuresFile string, out io.Writer) (int, error) {
	var focusRE, skipRE *regexp.Regexp
	var err error
	if focus != "" {
		if focusRE, err = regexp.Compile(focus); err != nil {
			return 2, fmt.Errorf("-focus: %w", err)
		}
	}
	if skip != "" {
		if skipRE, err = regexp.Compile(skip); err != nil {
			return 2, fmt.Errorf("-skip: %w", err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 2, err
	}
	var r report
	if err := xml.Unmarshal(data, &r); err != nil {
		return 2, fmt.Errorf("%s: %w", path, err)
	}
	cases := r.Cases
	for _, s := range r.Suites {
		cases = append(cases, s.Cases...)
	}
	rows := map[string]*counts{}
	var total counts
	var failed []string
	for _, c := range cases {
		msg := firstLine(c)
		selected := (focusRE == nil || focusRE.MatchString(c.Name)) && (skipRE == nil || !skipRE.MatchString(c.Name))
		status := c.Status
		if status == "" {
			switch {
			case c.Failure != nil || c.Error != nil:
				status = "failed"
			case c.Skipped != nil:
				status = "skipped"
			default:
				status = "passed"
			}
		}
		if status == "skipped" && !selected {
			continue // not asked for
		}
		// Suite nodes ([SynchronizedBeforeSuite], [ReportAfterSuite], …)
		// are no specs: shown only when they fail.
		if !strings.HasPrefix(c.Name, "[It]") && strings.HasPrefix(c.Name, "[") && status == "passed" {
			continue
		}
		sig := sigRE.FindString(c.Name)
		if sig == "" {
			sig = "(suite)"
		}
		row := rows[sig]
		if row == nil {
			row = &counts{}
			rows[sig] = row
		}
		for _, k := range []*counts{row, &total} {
			k.specs++
			switch status {
			case "passed":
				k.passed++
			case "skipped", "pending":
				k.skipped++
			default: // failed, panicked, interrupted, aborted, timedout
				k.failed++
			}
		}
		if status != "passed" && status != "skipped" && status != "pending" {
			failed = append(failed, fmt.Sprintf("%s [%s]\n    %s", c.Name, status, msg))
		}
	}
	sigs := make([]string, 0, len(rows))
	for s := range rows {
		sigs = append(sigs, s)
	}
	sort.Strings(sigs)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "SIG\tspecs\tpassed\tfailed\tskipped\t")
	for _, s := range sigs {
		c := rows[s]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", s, c.specs, c.passed, c.failed, c.skipped)
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%d\t\n", total.specs, total.passed, total.failed, total.skipped)
	if err := tw.Flush(); err != nil {
		return 2, err
	}
	sort.Strings(failed)
	if len(failed) > 0 {
		fmt.Fprintf(out, "\n%d failed:\n", len(failed))
		for _, f := range failed {
			fmt.Fprintln(out, "  "+f)
		}
	}
	if failuresFile != "" {
		body := strings.Join(failed, "\n")
		if body != "" {
			body += "\n"
		}
		if err := os.WriteFile(failuresFile, []byte(body), 0o644); err != nil {
			return 2, err
		}
	}
	if total.failed > 0 {
		return 1, nil
	}
	return 0, nil
}

// maxMessage bounds a printed message (some are a whole API object dumped).
const maxMessage = 300

// firstLine is the first non-empty line of a failure's message (or body).
func firstLine(c testcase) string {
	var texts []string
	if c.Failure != nil {
		texts = append(texts, c.Failure.Message, c.Failure.Body)
	}
	if c.Error != nil {
		texts = append(texts, c.Error.Message, c.Error.Body)
	}
	for _, t := range texts {
		for _, line := range strings.Split(t, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				if len(line) > maxMessage {
					line = line[:maxMessage] + " …"
				}
				return line
			}
		}
	}
	return ""
}
