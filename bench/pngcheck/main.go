// Command pngcheck checks a screenshot (bench/trace-browser-check.sh): the
// picture is not blank (at least -min of its pixels are not the
// background's colour) and every colour given as an argument (#rrggbb)
// appears in it, within -tol per channel (anti-aliasing). It prints what it
// found and exits 1 if a check fails.
//
//	go run ./bench/pngcheck [-min 0.02] [-tol 8] FILE.png '#d62728' ...
package main

import (
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"strconv"
)

func main() {
	minFrac := flag.Float64("min", 0.02, "least fraction of pixels that differ from the background")
	tol := flag.Int("tol", 8, "per-channel tolerance when looking for a colour")
	flag.Parse()
	if flag.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: pngcheck [-min F] [-tol N] FILE.png [#rrggbb ...]")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var want [][3]int
	for _, s := range flag.Args()[1:] {
		c, err := parseHex(s)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		want = append(want, c)
	}
	frac, found := check(img, want, *tol)
	b := img.Bounds()
	fmt.Printf("pngcheck: %s: %dx%d, %.1f%% of the pixels not background\n", flag.Arg(0), b.Dx(), b.Dy(), 100*frac)
	ok := frac >= *minFrac
	if !ok {
		fmt.Printf("pngcheck: FAIL: the picture is blank (under %.1f%%)\n", 100**minFrac)
	}
	for i, s := range flag.Args()[1:] {
		if found[i] {
			fmt.Printf("pngcheck: colour %s present\n", s)
		} else {
			fmt.Printf("pngcheck: FAIL: colour %s absent\n", s)
			ok = false
		}
	}
	if !ok {
		os.Exit(1)
	}
}

func parseHex(s string) ([3]int, error) {
	if len(s) != 7 || s[0] != '#' {
		return [3]int{}, fmt.Errorf("colour %q: want #rrggbb", s)
	}
	v, err := strconv.ParseUint(s[1:], 16, 32)
	if err != nil {
		return [3]int{}, fmt.Errorf("colour %q: %v", s, err)
	}
	return [3]int{int(v >> 16), int(v >> 8 & 0xff), int(v & 0xff)}, nil
}

// check returns the fraction of pixels that differ from the top-left
// pixel's colour (the background), and which wanted colours occur.
func check(img image.Image, want [][3]int, tol int) (float64, []bool) {
	b := img.Bounds()
	rgb := func(x, y int) [3]int {
		r, g, bl, _ := img.At(x, y).RGBA()
		return [3]int{int(r >> 8), int(g >> 8), int(bl >> 8)}
	}
	bg := rgb(b.Min.X, b.Min.Y)
	found := make([]bool, len(want))
	diff := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := rgb(x, y)
			if c != bg {
				diff++
			}
			for i, w := range want {
				if !found[i] && abs(c[0]-w[0]) <= tol && abs(c[1]-w[1]) <= tol && abs(c[2]-w[2]) <= tol {
					found[i] = true
				}
			}
		}
	}
	n := b.Dx() * b.Dy()
	if n == 0 {
		return 0, found
	}
	return float64(diff) / float64(n), found
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
