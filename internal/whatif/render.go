package whatif

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// maxRows bounds each table of WriteResult; the JSON and YAML outputs hold
// every row.
const maxRows = 50

// WriteResult prints a simulation for people: one table per part.
func WriteResult(w io.Writer, r *Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, args ...any) { _, _ = fmt.Fprintf(tw, format, args...) }
	p("Note: %s.\n", r.Note)
	if line := OverlaysLine(r.Overlays, true); line != "" {
		p("%s\n", line)
	}
	p("\n")
	p("NODEPOOL\tWEIGHT\tREADY\tREASON\n")
	for _, np := range r.NodePools {
		p("%s\t%d\t%t\t%s\n", np.Name, np.Weight, np.Ready, np.Reason)
	}
	onNew := 0
	for _, l := range r.Launches {
		onNew += len(l.Pods)
	}
	p("\nPending pods: %d (%d on new nodes, %d on existing nodes, %d cannot be placed)\n", r.PendingPods, onNew, len(r.Placements), len(r.Unschedulable))
	if len(r.Launches) > 0 {
		p("\nNodeClaims to launch: %d\n", len(r.Launches))
		p("NODEPOOL\tINSTANCE TYPE\tZONE\tCAPACITY TYPE\t$/H\tPODS\tOPTIONS\n")
		rows(p, r.Launches, maxRows, func(l Launch) {
			p("%s\t%s\t%s\t%s\t%s\t%d\t%s\n", l.NodePool, l.InstanceType, l.Zone, l.CapacityType, priceCell(l.Price, l.PriceOverlaid), len(l.Pods), options(l))
		})
	}
	if len(r.Placements) > 0 {
		p("\nPods placed on existing nodes:\nPOD\tNODE\n")
		rows(p, r.Placements, maxRows, func(pl Placement) { p("%s\t%s\n", pl.Pod, pl.Node) })
	}
	if len(r.Unschedulable) > 0 {
		p("\nPods that cannot be placed:\nPOD\tREASON\n")
		rows(p, r.Unschedulable, maxRows, func(u PodReason) { p("%s\t%s\n", u.Pod, u.Reason) })
	}
	d := r.Disruption
	p("\nDisruption now: ")
	if d.Command == "" {
		p("nothing to disrupt\n")
	} else {
		p("%s\n", d.Command)
		p("METHOD\tDECISION\tNODES\tPODS MOVED\tREPLACEMENTS\t$/H BEFORE\t$/H AFTER\tSAVINGS $/H\n")
		var repl []string
		for _, l := range d.Replacements {
			repl = append(repl, fmt.Sprintf("%s (%s, %s, %s)", l.InstanceType, l.NodePool, l.Zone, l.CapacityType))
		}
		p("%s\t%s\t%s\t%d\t%s\t%.4f\t%.4f\t%.4f\n", d.Method, d.Decision, shorten(d.Nodes), d.PodsMoved, orNone(strings.Join(repl, ", ")),
			d.PriceBefore, d.PriceAfter, d.Savings)
	}
	if len(d.Candidates) > 0 {
		p("\nDisruption candidates: %d (most savings per unit of disruption cost first)\nNODE\tNODEPOOL\tINSTANCE TYPE\t$/H\tPODS\tCONSOLIDATABLE\tDRIFTED\n", len(d.Candidates))
		rows(p, d.Candidates, 10, func(c Candidate) {
			p("%s\t%s\t%s\t%s\t%d\t%t\t%t\n", c.Node, c.NodePool, c.InstanceType, priceCell(c.Price, c.PriceOverlaid), c.Pods, c.Consolidatable, c.Drifted)
		})
	}
	if len(d.Blocked) > 0 {
		p("\nNodes not disrupted:\nNODE\tREASON\tMESSAGE\n")
		rows(p, d.Blocked, maxRows, func(b NodeReason) { p("%s\t%s\t%s\n", b.Node, b.Reason, b.Message) })
	}
	if len(d.Budgets) > 0 {
		p("\nDisruption budgets now:\nNODEPOOL\tREASON\tALLOWED\tNODES\tELIGIBLE\n")
		for _, b := range d.Budgets {
			p("%s\t%s\t%s\t%d\t%d\n", b.NodePool, b.Reason, b.allowedText(), b.Nodes, b.Eligible)
		}
	}
	c := r.Cost
	p("\nCost: $%.4f/h now", c.BeforeChanges)
	if c.BeforeChanges != c.Before {
		p(", $%.4f/h after the changes", c.Before)
	}
	p(", $%.4f/h after launches, $%.4f/h after disruption (%+.4f $/h)", c.AfterProvisioning, c.After, c.After-c.BeforeChanges)
	if c.Unpriced > 0 {
		p("; %d node(s) have no catalog price and are not counted", c.Unpriced)
	}
	p("\n")
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing result: %w", err)
	}
	return nil
}

// rows prints the first limit items of a table with row, then counts the rest.
func rows[T any](p func(string, ...any), items []T, limit int, row func(T)) {
	for i, x := range items {
		if i == limit {
			p("... and %d more\n", len(items)-limit)
			return
		}
		row(x)
	}
}

func options(l Launch) string {
	s := strings.Join(l.InstanceTypes, ",")
	if l.Options > len(l.InstanceTypes) {
		s += fmt.Sprintf(" (+%d more)", l.Options-len(l.InstanceTypes))
	}
	return s
}

// allowedText is a budget's allowance for people: a count or "unlimited".
func (b Budget) allowedText() string {
	if b.Allowed < 0 {
		return "unlimited"
	}
	return fmt.Sprint(b.Allowed)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// shorten lists up to five names and counts the rest.
func shorten(names []string) string {
	const shown = 5
	if len(names) <= shown {
		return strings.Join(names, ",")
	}
	return fmt.Sprintf("%s (+%d more)", strings.Join(names[:shown], ","), len(names)-shown)
}
