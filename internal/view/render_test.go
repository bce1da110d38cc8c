package view

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	clocktesting "k8s.io/utils/clock/testing"
)

// plain is a renderer that draws no colours, as for a pipe.
func plain() *lipgloss.Renderer { return lipgloss.NewRenderer(&bytes.Buffer{}) }

// wantScreen is the fixture cluster's screen: groups in NodePool order
// (unmanaged last), rows by name, in-flight claims marked.
const wantScreen = `Dovetail view: 4 nodes, 1 in flight, 4 pods, $0.3680/h, $268.64/month
cpu ████░░░░░░  44% (4.0 cores of 9.0 cores)   memory ████░░░░░░  38% (13.0Gi of 34.0Gi)
test prices (1 unpriced); sort: name; showing: all NodePools

NAME           INSTANCE TYPE  ZONE        CAPACITY   $/H     CPU              MEMORY           PODS  AGE  STATUS       DISRUPTION
NodePool batch: 1 nodes, 0 in flight, 1 pods, $0.1920/h, cpu 25%, memory 25%
n-batch        m5.xlarge      us-east-1b  on-demand  0.1920  ███░░░░░░░  25%  ███░░░░░░░  25%  1     3d   Ready        consolidatable, disrupting (Underutilized)
NodePool default: 2 nodes, 1 in flight, 3 pods, $0.1760/h, cpu 75%, memory 56%
c-new (claim)  m5.large       us-east-1a  spot       0.0400  ░░░░░░░░░░   0%  ░░░░░░░░░░   0%  0     20s  Registering
n-busy         m5.large       us-east-1a  on-demand  0.0960  ██████████ 100%  █████████░  88%  2     2h   Ready
n-drift        m5.large       us-east-1a  spot       0.0400  █████░░░░░  50%  ███░░░░░░░  25%  1     30m  Ready        drifted, blocked: do-not-disrupt pod shop/db
NodePool spare: 0 nodes, 0 in flight, 0 pods, $0.0000/h, cpu 0%, memory 0%
NodePool (unmanaged): 1 nodes, 0 in flight, 0 pods, $0.0000/h, cpu 0%, memory 0%
n-other        t9.odd         us-east-1c  -          ?       ░░░░░░░░░░   0%  ░░░░░░░░░░   0%  0     1m   Ready
`

func TestRenderScreen(t *testing.T) {
	out := Render(plain(), Build(fixture(), Options{Now: now, Prices: testPrices()}), Screen{Now: now, Note: "test prices"})
	if out != wantScreen {
		t.Errorf("screen\n%s\nwant\n%s", out, wantScreen)
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("a renderer without a terminal drew escape codes")
	}
}

func TestModelKeysAndUpdates(t *testing.T) {
	updates := make(chan tea.Msg, 1)
	m := NewModel(func() tea.Msg { return <-updates }, testPrices(), "test prices")
	m.Clock = clocktesting.NewFakePassiveClock(now)
	m.Renderer = plain()
	if m.Init() == nil {
		t.Fatal("Init waits for nothing")
	}
	if !strings.Contains(m.View(), "no nodes, NodeClaims or NodePools") {
		t.Errorf("empty screen:\n%s", m.View())
	}
	_, cmd := m.Update(ObjectsMsg{Objects: fixture()})
	if cmd == nil {
		t.Fatal("the model stopped waiting for changes")
	}
	updates <- ObjectsMsg{Err: errors.New("watch closed")}
	msg := cmd()
	m.Update(msg)
	screen := m.View()
	if !strings.Contains(screen, "error: watch closed") || !strings.Contains(screen, "n-busy") {
		t.Errorf("an error dropped the objects or was not shown:\n%s", screen)
	}
	if _, cmd := m.Update(ObjectsMsg{Err: context.Canceled}); cmd != nil {
		t.Error("the model keeps waiting after its context ended")
	}

	key := func(s string) tea.Cmd {
		_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)})
		return cmd
	}
	key("s")
	if !strings.Contains(m.View(), "sort: $/h") {
		t.Error("s did not sort by price")
	}
	key("f")
	screen = m.View()
	if !strings.Contains(screen, "showing: batch") || strings.Contains(screen, "n-busy") {
		t.Errorf("f did not filter to the first NodePool:\n%s", screen)
	}
	key("f")
	if !strings.Contains(m.View(), "showing: default") {
		t.Error("f did not move to the next NodePool")
	}
	key("a")
	if !strings.Contains(m.View(), "showing: all NodePools") {
		t.Error("a did not clear the filter")
	}
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 9})
	if lines := strings.Count(m.View(), "\n") + 1; lines > 9 {
		t.Errorf("the screen has %d lines for a 9-line window", lines)
	}
	top := m.View()
	key("j")
	if after := m.View(); m.offset != 1 || after == top {
		t.Errorf("j did not scroll: offset %d", m.offset)
	}
	key("k")
	if m.offset != 0 {
		t.Errorf("k did not scroll back: offset %d", m.offset)
	}
	if cmd := key("q"); cmd == nil || cmd() != tea.Quit() {
		t.Error("q does not quit")
	}
}
