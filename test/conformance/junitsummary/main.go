// Command junitsummary reads the JUnit report an e2e.test run wrote and
// prints, per SIG, how many specs passed, failed and were skipped and how
// long they took, then the names of the failed specs. hack/conformance.sh
// runs it at the end of every run.
//
//	go run ./junitsummary REPORT.xml...
package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

type testSuites struct {
	Suites []testSuite `xml:"testsuite"`
}

type testSuite struct {
	Cases []testCase `xml:"testcase"`
}

type testCase struct {
	Name    string   `xml:"name,attr"`
	Status  string   `xml:"status,attr"`
	Seconds float64  `xml:"time,attr"`
	Failure *message `xml:"failure"`
	Error   *message `xml:"error"`
	Skipped *message `xml:"skipped"`
}

type message struct {
	Message string `xml:"message,attr"`
}

type tally struct {
	passed, failed, skipped int
	took                    time.Duration
}

var sigPattern = regexp.MustCompile(`\[(sig-[a-z0-9-]+)\]`)

// outcome is what became of a case: passed, failed, skipped (by the spec
// itself, e.g. for a missing capability) or filtered (not selected by the
// run's focus, skip and label filter: Ginkgo lists those as skipped too,
// with the bare message "skipped", and pending specs as "pending").
func outcome(c testCase) string {
	if c.Skipped != nil && (c.Skipped.Message == "skipped" || c.Skipped.Message == "pending") {
		return "filtered"
	}
	switch c.Status {
	case "passed":
		return "passed"
	case "skipped", "pending":
		return "skipped"
	case "":
	default: // failed, panicked, interrupted, timedout, aborted
		return "failed"
	}
	switch {
	case c.Failure != nil || c.Error != nil:
		return "failed"
	case c.Skipped != nil:
		return "skipped"
	}
	return "passed"
}

// leafType is the node type Ginkgo puts before a spec's name in JUnit
// ("[It] ", "[BeforeSuite] ").
var leafType = regexp.MustCompile(`^\[(It|BeforeSuite|AfterSuite|SynchronizedBeforeSuite|SynchronizedAfterSuite|ReportBeforeSuite|ReportAfterSuite|DeferCleanup \([A-Za-z]+\))\] `)

// specName is a case's name without its node type: the spec's full text,
// what --ginkgo.focus matches.
func specName(name string) string { return leafType.ReplaceAllString(name, "") }

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: junitsummary REPORT.xml...")
		os.Exit(2)
	}
	perSIG := map[string]*tally{}
	var total tally
	var failed []string
	for _, file := range os.Args[1:] {
		data, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		var suites testSuites
		if err := xml.Unmarshal(data, &suites); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", file, err)
			os.Exit(1)
		}
		for _, s := range suites.Suites {
			for _, c := range s.Cases {
				// Suite-level nodes ([SynchronizedBeforeSuite], ...) count
				// only when they fail: they are not specs.
				suiteNode := strings.HasPrefix(c.Name, "[") && strings.Contains(c.Name, "Suite]") && !sigPattern.MatchString(c.Name)
				sig := "other"
				if m := sigPattern.FindStringSubmatch(c.Name); m != nil {
					sig = m[1]
				}
				t := perSIG[sig]
				if t == nil {
					t = &tally{}
					perSIG[sig] = t
				}
				took := time.Duration(c.Seconds * float64(time.Second))
				switch outcome(c) {
				case "filtered":
					continue
				case "passed":
					if suiteNode {
						continue
					}
					t.passed++
					total.passed++
				case "skipped":
					if suiteNode {
						continue
					}
					t.skipped++
					total.skipped++
				default:
					t.failed++
					total.failed++
					name := specName(c.Name)
					if c.Status != "" && c.Status != "failed" {
						name += " (" + c.Status + ")" // panicked, interrupted, timedout
					}
					failed = append(failed, name)
				}
				t.took += took
				total.took += took
			}
		}
	}
	sigs := make([]string, 0, len(perSIG))
	for s, t := range perSIG {
		if t.passed+t.failed+t.skipped > 0 {
			sigs = append(sigs, s)
		}
	}
	sort.Strings(sigs)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "SIG\tpassed\tfailed\tskipped\ttime")
	for _, s := range sigs {
		t := perSIG[s]
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\n", s, t.passed, t.failed, t.skipped, t.took.Round(time.Second))
	}
	fmt.Fprintf(w, "total\t%d\t%d\t%d\t%s\n", total.passed, total.failed, total.skipped, total.took.Round(time.Second))
	w.Flush()
	if len(failed) > 0 {
		sort.Strings(failed)
		fmt.Println("\nfailed:")
		for _, f := range failed {
			fmt.Println("  " + f)
		}
	}
	// The closing line CI-style runners recognise.
	fmt.Printf("\nconformance: %d passed, %d failed, %d skipped\n", total.passed, total.failed, total.skipped)
}
