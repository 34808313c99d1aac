package testutil

import (
	"slices"
	"strconv"
	"strings"
)

// Screen replays what a program wrote to a terminal and returns the lines left on screen,
// trailing blanks trimmed. It knows the few sequences the doctor's in-place output uses:
// carriage return, newline, cursor up (ESC[nA), to the start of a previous line (ESC[nF),
// erase line (ESC[2K), erase below (ESC[J);
// styles (ESC[...m) are dropped.
func Screen(raw string) []string {
	var lines [][]rune
	row, col := 0, 0
	grow := func() {
		for len(lines) <= row {
			lines = append(lines, nil)
		}
	}
	rs := []rune(raw)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '\r':
			col = 0
		case '\n':
			row++
			col = 0
		case 0x1b:
			if i+1 >= len(rs) || rs[i+1] != '[' {
				continue
			}
			j := i + 2
			for j < len(rs) && (rs[j] >= '0' && rs[j] <= '9' || rs[j] == ';') {
				j++
			}
			if j >= len(rs) {
				return trimScreen(lines)
			}
			arg := string(rs[i+2 : j])
			switch rs[j] {
			case 'A':
				n, err := strconv.Atoi(arg)
				if err != nil {
					n = 1
				}
				row = max(0, row-n)
			case 'F':
				n, err := strconv.Atoi(arg)
				if err != nil {
					n = 1
				}
				row, col = max(0, row-n), 0
			case 'K':
				grow()
				lines[row] = nil
			case 'J':
				grow()
				if col < len(lines[row]) {
					lines[row] = lines[row][:col]
				}
				lines = lines[:row+1]
			}
			i = j
		default:
			grow()
			for len(lines[row]) <= col {
				lines[row] = append(lines[row], ' ')
			}
			lines[row][col] = r
			col++
		}
	}
	return trimScreen(lines)
}

func trimScreen(lines [][]rune) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(string(l), " ")
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// Terminal replays raw on a terminal of width columns and height rows, as tmux does, and
// returns the rows left on screen and the lines pushed into the scrollback, trailing blanks
// trimmed. Unlike Screen it scrolls: a newline on the bottom row pushes the top row into
// the scrollback, a line longer than the width wraps, and erasing below (ESC[J) with the
// cursor on the top-left cell pushes the whole screen into the scrollback first, as tmux's
// scroll-on-clear does. Sequences it does not know are dropped.
func Terminal(raw string, width, height int) (screen, scrollback []string) {
	rows := make([][]rune, height)
	var back [][]rune
	row, col := 0, 0
	lineFeed := func() {
		if row < height-1 {
			row++
			return
		}
		back = append(back, rows[0])
		copy(rows, rows[1:])
		rows[height-1] = nil
	}
	rs := []rune(raw)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '\r':
			col = 0
		case '\n':
			lineFeed()
			col = 0
		case 0x1b:
			if i+1 >= len(rs) || rs[i+1] != '[' {
				continue
			}
			j := i + 2
			for j < len(rs) && (rs[j] >= '0' && rs[j] <= '9' || rs[j] == ';' || rs[j] == '?') {
				j++
			}
			if j >= len(rs) {
				i = j
				break
			}
			arg := string(rs[i+2 : j])
			n, err := strconv.Atoi(arg)
			if err != nil || n == 0 {
				n = 1
			}
			switch rs[j] {
			case 'A':
				row = max(0, row-n)
			case 'B':
				row = min(height-1, row+n)
			case 'F':
				row, col = max(0, row-n), 0
			case 'E':
				row, col = min(height-1, row+n), 0
			case 'K':
				switch arg {
				case "2":
					rows[row] = nil
				case "", "0":
					if col < len(rows[row]) {
						rows[row] = rows[row][:col]
					}
				}
			case 'J':
				if arg != "" && arg != "0" {
					break
				}
				if row == 0 && col == 0 {
					last := -1
					for k, l := range rows {
						if strings.TrimSpace(string(l)) != "" {
							last = k
						}
					}
					back = append(back, rows[:last+1]...)
					rows = make([][]rune, height)
					break
				}
				if col < len(rows[row]) {
					rows[row] = rows[row][:col]
				}
				for k := row + 1; k < height; k++ {
					rows[k] = nil
				}
			}
			i = j
		default:
			if col >= width {
				lineFeed()
				col = 0
			}
			for len(rows[row]) <= col {
				rows[row] = append(rows[row], ' ')
			}
			rows[row] = slices.Clone(rows[row])
			rows[row][col] = r
			col++
		}
	}
	return trimScreen(rows), trimScreen(back)
}
