package geo

import (
	"errors"
	"fmt"
	"math"
)

// WGS 84 ellipsoid.
const (
	WGS84A    = 6378137.0
	WGS84InvF = 298.257223563
)

// UTM constants (the scale on the central meridian and the false origin).
const (
	UTMScale         = 0.9996
	UTMFalseEasting  = 500000.0
	UTMFalseNorthing = 10000000.0 // southern zones only
)

// TransverseMercator is an ellipsoidal transverse mercator projection,
// evaluated with Krüger's series to order n⁶ as in C. F. F. Karney,
// "Transverse Mercator with an accuracy of a few nanometers", J. Geodesy 85
// (2011), equations 7–11 and 35–36. It is safe for concurrent use.
type TransverseMercator struct {
	lon0   float64    // central meridian, degrees
	k0A    float64    // scale on the central meridian times the rectifying radius A
	fe, fn float64    // false easting and northing
	e, e2m float64    // eccentricity, 1 − e²
	alpha  [6]float64 // α₁…α₆: conformal sphere → plane
	beta   [6]float64 // β₁…β₆: plane → conformal sphere
}

// NewTransverseMercator returns the projection of the ellipsoid with
// semi-major axis a and flattening f (0 ≤ f < 1), scale k0 on the central
// meridian lon0 (degrees) and the given false origin (metres).
func NewTransverseMercator(a, f, k0, lon0, falseEasting, falseNorthing float64) (*TransverseMercator, error) {
	finite := func(v ...float64) bool {
		for _, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return false
			}
		}
		return true
	}
	if !finite(a, f, k0, lon0, falseEasting, falseNorthing) || a <= 0 || f < 0 || f >= 1 || k0 <= 0 {
		return nil, errors.New("geo: transverse mercator needs a finite a > 0, 0 ≤ f < 1, k0 > 0 and a finite origin")
	}
	n := f / (2 - f)
	n2 := n * n
	t := &TransverseMercator{
		lon0: lon0,
		k0A:  k0 * a / (1 + n) * (1 + n2*(1.0/4+n2*(1.0/64+n2/256))),
		fe:   falseEasting,
		fn:   falseNorthing,
		e:    math.Sqrt(f * (2 - f)),
		e2m:  1 - f*(2-f),
	}
	// Karney (2011), equations 35 and 36, in Horner form.
	t.alpha = [6]float64{
		n * (1.0/2 + n*(-2.0/3+n*(5.0/16+n*(41.0/180+n*(-127.0/288+n*7891.0/37800))))),
		n2 * (13.0/48 + n*(-3.0/5+n*(557.0/1440+n*(281.0/630+n*-1983433.0/1935360)))),
		n2 * n * (61.0/240 + n*(-103.0/140+n*(15061.0/26880+n*167603.0/181440))),
		n2 * n2 * (49561.0/161280 + n*(-179.0/168+n*6601661.0/7257600)),
		n2 * n2 * n * (34729.0/80640 + n*-3418889.0/1995840),
		n2 * n2 * n2 * 212378941.0 / 319334400,
	}
	t.beta = [6]float64{
		n * (1.0/2 + n*(-2.0/3+n*(37.0/96+n*(-1.0/360+n*(-81.0/512+n*96199.0/604800))))),
		n2 * (1.0/48 + n*(1.0/15+n*(-437.0/1440+n*(46.0/105+n*-1118711.0/3870720)))),
		n2 * n * (17.0/480 + n*(-37.0/840+n*(-209.0/4480+n*5569.0/90720))),
		n2 * n2 * (4397.0/161280 + n*(-11.0/504+n*-830251.0/7257600)),
		n2 * n2 * n * (4583.0/161280 + n*-108847.0/3991680),
		n2 * n2 * n2 * 20648693.0 / 638668800,
	}
	return t, nil
}

// UTM returns the projection of a WGS 84 UTM zone (1–60), north or south.
func UTM(zone int, south bool) (*TransverseMercator, error) {
	if zone < 1 || zone > 60 {
		return nil, fmt.Errorf("geo: UTM zone %d is not in 1..60", zone)
	}
	fn := 0.0
	if south {
		fn = UTMFalseNorthing
	}
	return NewTransverseMercator(WGS84A, 1/WGS84InvF, UTMScale, float64(6*zone-183), UTMFalseEasting, fn)
}

// CentralMeridian is the projection's central meridian in degrees.
func (t *TransverseMercator) CentralMeridian() float64 { return t.lon0 }

// Forward maps degrees to projected metres. Longitudes are taken relative to
// the central meridian modulo 360°; a point more than 90° from it (outside
// the hemisphere the projection covers once) gives NaN.
func (t *TransverseMercator) Forward(lon, lat float64) (x, y float64) {
	if !(math.Abs(lat) <= 90) || math.IsInf(lon, 0) || math.IsNaN(lon) {
		return math.NaN(), math.NaN()
	}
	return t.forward(lon, math.Tan(lat*deg))
}

// forward is Forward with the latitude given as τ = tan φ, which a web
// mercator y gives without a trigonometric call: tan(gd ψ) = sinh ψ.
func (t *TransverseMercator) forward(lon, tau float64) (x, y float64) {
	l := math.Remainder(lon-t.lon0, 360)
	if !(math.Abs(l) <= 90) || math.IsNaN(tau) {
		return math.NaN(), math.NaN()
	}
	taup := t.taup(tau)
	sl, cl := math.Sincos(l * deg)
	// ξ′, η′: the point on the transverse mercator of the conformal sphere.
	xip := math.Atan2(taup, cl)
	etap := math.Asinh(sl / math.Hypot(taup, cl))
	dxi, deta := sumSines(&t.alpha, xip, etap)
	return t.fe + t.k0A*(etap+deta), t.fn + t.k0A*(xip+dxi)
}

// Inverse maps projected metres to degrees. The longitude is the central
// meridian plus at most ±90°, not wrapped into ±180°, so a raster that
// crosses the antimeridian keeps a continuous outline.
func (t *TransverseMercator) Inverse(x, y float64) (lon, lat float64) {
	xi := (y - t.fn) / t.k0A
	eta := (x - t.fe) / t.k0A
	// Beyond |η| = 10 (some 60,000 km from the central meridian) nothing
	// is on the ellipsoid, and sinh(12η) would overflow.
	if !(math.Abs(eta) <= 10) || math.IsInf(xi, 0) || math.IsNaN(xi) {
		return math.NaN(), math.NaN()
	}
	dxi, deta := sumSines(&t.beta, xi, eta)
	xip, etap := xi-dxi, eta-deta
	sxi, cxi := math.Sincos(xip)
	sheta := math.Sinh(etap)
	taup := sxi / math.Hypot(sheta, cxi)
	return t.lon0 + math.Atan2(sheta, cxi)*rad, math.Atan(t.tauf(taup)) * rad
}

// sumSines is Σ c_j sin(2jζ) for ζ = ξ + iη by Clenshaw's recurrence on
// complex numbers; its real and imaginary parts are Karney's sums
// Σ c_j sin 2jξ cosh 2jη and Σ c_j cos 2jξ sinh 2jη.
func sumSines(c *[6]float64, xi, eta float64) (re, im float64) {
	s2, c2 := math.Sincos(2 * xi)
	sh, ch := math.Sinh(2*eta), math.Cosh(2*eta)
	two := complex(2*c2*ch, -2*s2*sh) // 2 cos 2ζ
	var b1, b2 complex128
	for k := len(c) - 1; k >= 0; k-- {
		b1, b2 = complex(c[k], 0)+two*b1-b2, b1
	}
	s := b1 * complex(s2*ch, c2*sh) // × sin 2ζ
	return real(s), imag(s)
}

// taup is tan χ of the conformal latitude χ for τ = tan φ (Karney eq. 7–9).
func (t *TransverseMercator) taup(tau float64) float64 {
	tau1 := math.Hypot(1, tau)
	sig := math.Sinh(t.e * math.Atanh(t.e*tau/tau1))
	return math.Hypot(1, sig)*tau - sig*tau1
}

// tauf inverts taup by Newton's method (Karney eq. 19–21), which converges
// to full precision in two or three steps.
func (t *TransverseMercator) tauf(taup float64) float64 {
	if math.IsInf(taup, 0) || math.IsNaN(taup) {
		return taup
	}
	const tol = 1.5e-9 // √ε/10: one more quadratic step is below ε
	stol := tol * math.Max(1, math.Abs(taup))
	tau := taup / t.e2m
	for range 5 {
		tp := t.taup(tau)
		d := (taup - tp) * (1 + t.e2m*tau*tau) / (t.e2m * math.Hypot(1, tau) * math.Hypot(1, tp))
		tau += d
		if !(math.Abs(d) >= stol) {
			break
		}
	}
	return tau
}
