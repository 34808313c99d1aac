package testutil

import (
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
