package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"
)

// liveBlock is a group of lines redrawn in place on a terminal, as the probe's progress and
// watch's live view are: each drawing moves the cursor back over the previous one and
// clears below it.
type liveBlock struct {
	w     io.Writer
	lines int // lines drawn last time, to move back over
	// size is the terminal's width and height, read at every drawing (it may be resized);
	// 0 when unknown.
	size func() (width, height int)
	// more is the last line when the block is taller than the terminal, with a %d for the
	// lines left out.
	more string
}

func newLiveBlock(w io.Writer, more string) liveBlock {
	b := liveBlock{w: w, more: more, size: func() (int, int) { return 0, 0 }}
	if f, ok := w.(interface{ Fd() uintptr }); ok {
		b.size = func() (int, int) {
			width, height, err := term.GetSize(f.Fd())
			if err != nil {
				return 0, 0
			}
			return width, height
		}
	}
	return b
}

// draw replaces the previous drawing with lines, each escaped whole but for its colour codes
// (as a lineWriter escapes them): the block's own cursor movements are the only other
// escape sequences it writes. It erases line by line, never below the cursor: erasing below
// from the top-left cell makes tmux push the whole screen into its scrollback, so a block
// drawn from the top row of a pane left a copy there at every redraw. It never moves down
// past the previous drawing's last line except to draw a longer block, so a redraw scrolls
// the terminal only as much as the block grew.
func (b *liveBlock) draw(lines []string) error {
	var s strings.Builder
	if b.lines > 0 {
		fmt.Fprintf(&s, "\x1b[%dF", b.lines) // back to the first line
	}
	width, height := b.size()
	safe := make([]string, len(lines))
	for i, l := range lines {
		safe[i] = escape(l, keepSGR)
	}
	lines = fitTerminal(safe, width, height, b.more)
	for _, l := range lines {
		s.WriteString("\x1b[2K" + l + "\n")
	}
	if extra := b.lines - len(lines); extra > 0 {
		// the previous drawing was longer: erase its last lines and come back up
		s.WriteString(strings.Repeat("\x1b[2K\n", extra))
		fmt.Fprintf(&s, "\x1b[%dF", extra)
	}
	b.lines = len(lines)
	_, err := io.WriteString(b.w, s.String())
	return err
}

// clear erases the drawing, so that what follows takes its place.
func (b *liveBlock) clear() error {
	if b.lines == 0 {
		return nil
	}
	_, err := fmt.Fprintf(b.w, "\x1b[%dF%s\x1b[%dF", b.lines, strings.Repeat("\x1b[2K\n", b.lines), b.lines)
	b.lines = 0
	return err
}

// fitTerminal cuts lines to the terminal: the drawing is moved back over by counting
// lines, so a line the terminal wraps, or a line scrolled off its top, would leave the
// previous drawing behind at every redraw. A width or height of 0 is unknown; more is the
// last line when lines are left out, with a %d for how many.
func fitTerminal(lines []string, width, height int, more string) []string {
	if height > 1 && len(lines) > height-1 {
		left := len(lines) - (height - 2)
		lines = append(lines[:height-2:height-2], fmt.Sprintf(more, left))
	}
	if width > 0 {
		for i, l := range lines {
			lines[i] = ansi.Truncate(l, width, "…")
		}
	}
	return lines
}
