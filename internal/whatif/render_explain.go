package whatif

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteExplanation prints an explanation for people.
func WriteExplanation(w io.Writer, e *Explanation) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, args ...any) { _, _ = fmt.Fprintf(tw, format, args...) }
	p("%s: %s\n", e.Object, e.Summary)
	if e.Event != "" {
		p("Event: %s\n", e.Event)
	}
	if line := OverlaysLine(e.Overlays, true); line != "" {
		p("%s\n", line)
	}
	if len(e.NodePools) > 0 {
		p("\nNODEPOOL\tWEIGHT\tCAN SERVE\tWHY\n")
		for _, v := range e.NodePools {
			p("%s\t%d\t%t\t%s\n", v.NodePool, v.Weight, v.CanServe, v.Reason)
			if v.Limit != "" {
				p("\t\t\t%s\n", v.Limit)
			}
			if v.Closest != "" {
				p("\t\t\tclosest: %s\n", v.Closest)
			}
		}
	}
	if tc := e.InstanceType; tc != nil {
		p("\nInstance type: %s\n", tc.Reason)
		if len(tc.Alternatives) > 0 {
			p("OPTION\tZONE\tCAPACITY TYPE\t$/H\tAVAILABLE\n")
			for _, a := range tc.Alternatives {
				mark := ""
				if a.InstanceType == tc.InstanceType {
					mark = " (chosen)"
				}
				p("%s%s\t%s\t%s\t%s\t%t\n", a.InstanceType, mark, a.Zone, a.CapacityType, priceCell(a.Price, a.PriceOverlaid), a.Available)
			}
		}
	}
	if d := e.Disruption; d != nil {
		p("\nDisruption:\n")
		for _, r := range d.Reasons {
			p("  - %s\n", r)
		}
	}
	if len(e.Budgets) > 0 {
		p("\nBUDGET REASONS\tNODES\tSCHEDULE\tDURATION\tACTIVE\tALLOWS\tCHANGES\n")
		for _, b := range e.Budgets {
			p("%s\t%s\t%s\t%s\t%t\t%d\t%s\n", b.Reasons, b.Nodes, orDash(b.Schedule), orDash(b.Duration), b.Active, b.Allows, b.Change)
		}
	}
	if len(e.Allowed) > 0 {
		p("\nREASON\tALLOWED NOW\tNODES\tELIGIBLE\n")
		for _, b := range e.Allowed {
			p("%s\t%s\t%d\t%d\n", b.Reason, b.allowedText(), b.Nodes, b.Eligible)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing explanation: %w", err)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
