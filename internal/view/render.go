package view

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
)

// BarWidth is the number of cells of a utilisation bar.
const BarWidth = 10

// Bar draws used over total as BarWidth cells and a percentage, for
// example "█████░░░░░  50%"; "-" for a total of zero (not known yet).
func Bar(used, total int64) string {
	if total <= 0 {
		return "-"
	}
	f := float64(used) / float64(total)
	filled := int(math.Round(f * BarWidth))
	filled = max(0, min(filled, BarWidth))
	return strings.Repeat("█", filled) + strings.Repeat("░", BarWidth-filled) + fmt.Sprintf(" %3.0f%%", f*100)
}

// Age writes a duration as kubectl does at its coarsest: 45s, 12m, 5h, 3d.
func Age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// Screen is what a rendering shows besides the table.
type Screen struct {
	// Now is the moment ages are taken at.
	Now time.Time
	// Sort and Filter are the current keys' state, shown in the header.
	Sort   SortKey
	Filter string
	// Note says where prices come from.
	Note string
	// Keys is the keys line; empty leaves it out (--once).
	Keys string
	// Err is the last error of the source, shown under the header.
	Err error
}

// styles are the lipgloss styles of a rendering.
type styles struct {
	title, group, dim, warn, bad lipgloss.Style
}

func newStyles(r *lipgloss.Renderer) styles {
	return styles{
		title: r.NewStyle().Bold(true),
		group: r.NewStyle().Bold(true).Foreground(lipgloss.Color("12")),
		dim:   r.NewStyle().Faint(true),
		warn:  r.NewStyle().Foreground(lipgloss.Color("11")),
		bad:   r.NewStyle().Foreground(lipgloss.Color("9")),
	}
}

var columns = []string{"NAME", "INSTANCE TYPE", "ZONE", "CAPACITY", "$/H", "CPU", "MEMORY", "PODS", "AGE", "STATUS", "DISRUPTION"}

// Render draws a table: the cluster totals, then each NodePool's rows.
// The renderer decides the colours: one writing to a file or buffer
// draws none.
func Render(r *lipgloss.Renderer, t Table, s Screen) string {
	st := newStyles(r)
	var b strings.Builder
	tot := t.Totals
	filter := s.Filter
	if filter == "" {
		filter = "all NodePools"
	}
	b.WriteString(st.title.Render(fmt.Sprintf("Dovetail view: %d nodes, %d in flight, %d pods, $%.4f/h, $%.2f/month",
		tot.Nodes, tot.InFlight, tot.Pods, tot.PricePerHour, tot.PricePerMonth())))
	b.WriteString("\n")
	fmt.Fprintf(&b, "cpu %s (%s of %s)   memory %s (%s of %s)\n",
		Bar(tot.CPURequested, tot.CPUAllocatable), cores(tot.CPURequested), cores(tot.CPUAllocatable),
		Bar(tot.MemoryRequested, tot.MemoryAllocatable), gib(tot.MemoryRequested), gib(tot.MemoryAllocatable))
	note := s.Note
	if tot.Unpriced > 0 {
		note += fmt.Sprintf(" (%d unpriced)", tot.Unpriced)
	}
	b.WriteString(st.dim.Render(fmt.Sprintf("%s; sort: %s; showing: %s", note, s.Sort, filter)))
	b.WriteString("\n")
	if s.Keys != "" {
		b.WriteString(st.dim.Render(s.Keys))
		b.WriteString("\n")
	}
	if s.Err != nil {
		b.WriteString(st.bad.Render("error: " + s.Err.Error()))
		b.WriteString("\n")
	}

	var cells [][]string
	for _, g := range t.Groups {
		for _, row := range g.Rows {
			cells = append(cells, rowCells(row, s.Now))
		}
	}
	widths := make([]int, len(columns))
	for i, c := range columns {
		widths[i] = lipgloss.Width(c)
	}
	for _, row := range cells {
		for i, c := range row {
			widths[i] = max(widths[i], lipgloss.Width(c))
		}
	}
	line := func(row []string, style func(i int, cell string) string) string {
		parts := make([]string, len(row))
		for i, c := range row {
			pad := c + strings.Repeat(" ", widths[i]-lipgloss.Width(c))
			if i == len(row)-1 {
				pad = c
			}
			parts[i] = style(i, pad)
		}
		return strings.TrimRight(strings.Join(parts, "  "), " ") + "\n"
	}
	plain := func(_ int, c string) string { return c }
	b.WriteString("\n")
	b.WriteString(st.title.Render(strings.TrimRight(line(columns, plain), "\n")))
	b.WriteString("\n")
	emit := func(g Group) {
		gt := g.Totals
		b.WriteString(st.group.Render(fmt.Sprintf("NodePool %s: %d nodes, %d in flight, %d pods, $%.4f/h, cpu %.0f%%, memory %.0f%%",
			g.NodePool, gt.Nodes, gt.InFlight, gt.Pods, gt.PricePerHour,
			100*ratio(gt.CPURequested, gt.CPUAllocatable), 100*ratio(gt.MemoryRequested, gt.MemoryAllocatable))))
		b.WriteString("\n")
	}
	i := 0
	for _, g := range t.Groups {
		emit(g)
		for range g.Rows {
			b.WriteString(line(cells[i], func(col int, c string) string {
				if col != len(columns)-1 || c == "" {
					return c
				}
				if strings.Contains(c, "blocked") {
					return st.bad.Render(c)
				}
				return st.warn.Render(c)
			}))
			i++
		}
	}
	if len(t.Groups) == 0 {
		b.WriteString(st.dim.Render("no nodes, NodeClaims or NodePools"))
		b.WriteString("\n")
	}
	return b.String()
}

func rowCells(r Row, now time.Time) []string {
	price := "?"
	if r.Priced {
		price = fmt.Sprintf("%.4f", r.Price)
	}
	name := r.Name
	if r.InFlight {
		name += " (claim)"
	}
	return []string{
		name, orDash(r.InstanceType), orDash(r.Zone), orDash(r.CapacityType), price,
		Bar(r.CPURequested, r.CPUAllocatable), Bar(r.MemoryRequested, r.MemoryAllocatable),
		fmt.Sprint(r.Pods), Age(now.Sub(r.Created)), r.Status, strings.Join(r.Disruption, ", "),
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cores(milli int64) string { return fmt.Sprintf("%.1f cores", float64(milli)/1000) }

func gib(b int64) string { return fmt.Sprintf("%.1fGi", float64(b)/(1<<30)) }
