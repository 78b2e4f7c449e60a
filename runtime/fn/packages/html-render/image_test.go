package htmlrender_test

import (
	"image"
	"image/color"
)

func image2x2() image.Image {
	m := image.NewRGBA(image.Rect(0, 0, 2, 2))
	for i := range m.Pix {
		m.Pix[i] = 0xff
	}
	m.Set(0, 0, color.RGBA{R: 0xff, A: 0xff})
	return m
}
