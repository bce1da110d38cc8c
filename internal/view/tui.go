package view

import (
	"context"
	"errors"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"k8s.io/utils/clock"
)

// Keys is the keys line of the interactive view.
const Keys = "keys: s sort, f next NodePool, a all NodePools, j/k or ↓/↑ scroll, q quit"

// ObjectsMsg carries the objects as the informers hold them after a change.
type ObjectsMsg struct {
	Objects Objects
	// Err is set when they could not be read.
	Err error
}

// tickMsg refreshes the ages.
type tickMsg time.Time

// Model is the bubbletea model of `dovetail view`. It holds the latest
// objects and redraws when an ObjectsMsg arrives; Updates delivers those.
type Model struct {
	// Updates waits for the next change and returns its ObjectsMsg; nil
	// when the objects are only ever sent to the program.
	Updates func() tea.Msg
	// Clock gives now; the real clock when nil.
	Clock clock.PassiveClock
	// Renderer draws the screen; lipgloss's default when nil.
	Renderer *lipgloss.Renderer
	// Prices and Note price the rows and say where prices come from.
	Prices Prices
	Note   string

	objects      Objects
	err          error
	sort         SortKey
	filter       string
	width        int
	height       int
	offset       int
	refreshEvery time.Duration
}

// NewModel returns a model that waits for changes through updates.
func NewModel(updates func() tea.Msg, prices Prices, note string) *Model {
	return &Model{Updates: updates, Prices: prices, Note: note, refreshEvery: 10 * time.Second}
}

func (m *Model) now() time.Time {
	if m.Clock != nil {
		return m.Clock.Now()
	}
	return clock.RealClock{}.Now()
}

func (m *Model) tick() tea.Cmd {
	if m.refreshEvery <= 0 {
		return nil
	}
	return tea.Tick(m.refreshEvery, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Init starts waiting for the first objects.
func (m *Model) Init() tea.Cmd {
	var cmds []tea.Cmd
	if m.Updates != nil {
		cmds = append(cmds, m.Updates)
	}
	return tea.Batch(append(cmds, m.tick())...)
}

// Update handles objects, keys and the window's size.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case ObjectsMsg:
		if errors.Is(msg.Err, context.Canceled) {
			return m, nil
		}
		if msg.Err != nil {
			m.err = msg.Err
		} else {
			m.objects, m.err = msg.Objects, nil
		}
		if m.Updates != nil {
			return m, m.Updates
		}
	case tickMsg:
		next := m.tick()
		return m, next
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.KeyMsg:
		switch msg.String() {
		case "q", "ctrl+c", "esc":
			return m, tea.Quit
		case "s":
			m.sort = m.sort.Next()
		case "f":
			m.filter = m.nextPool()
			m.offset = 0
		case "a":
			m.filter, m.offset = "", 0
		case "j", "down":
			m.offset++
		case "k", "up":
			m.offset = max(0, m.offset-1)
		}
	}
	return m, nil
}

// nextPool is the NodePool after the filter's, or none after the last.
func (m *Model) nextPool() string {
	pools := Build(m.objects, Options{Now: m.now()}).NodePools
	for i, p := range pools {
		if p == m.filter {
			if i+1 < len(pools) {
				return pools[i+1]
			}
			return ""
		}
	}
	if m.filter == "" && len(pools) > 0 {
		return pools[0]
	}
	return ""
}

// Table builds the rows of the current objects, sort and filter.
func (m *Model) Table() Table {
	return Build(m.objects, Options{Now: m.now(), Prices: m.Prices, Sort: m.sort, NodePool: m.filter})
}

// View renders the screen, scrolled by the offset and cut to the window.
func (m *Model) View() string {
	r := m.Renderer
	if r == nil {
		r = lipgloss.DefaultRenderer()
	}
	out := Render(r, m.Table(), Screen{Now: m.now(), Sort: m.sort, Filter: m.filter, Note: m.Note, Keys: Keys, Err: m.err})
	if m.height <= 0 {
		return out
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	const header = 6
	if len(lines) <= m.height || len(lines) <= header {
		return out
	}
	body := lines[header:]
	room := max(1, m.height-header)
	m.offset = min(m.offset, max(0, len(body)-room))
	end := min(len(body), m.offset+room)
	return strings.Join(append(lines[:header:header], body[m.offset:end]...), "\n")
}
