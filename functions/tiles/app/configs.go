package app

import (
	"github.com/tilesieve/tilesieve/shared/awsclient"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/images"
	"github.com/tilesieve/tilesieve/shared/images/iiif"
	"github.com/tilesieve/tilesieve/shared/images/pixel"
	"github.com/tilesieve/tilesieve/shared/origin/archive"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tileserver"
)

// Each part's Config, from the configuration: the one place a setting is
// handed on.

func tiersConfig(cfg config.Tiles) tiers.Config {
	return tiers.Config{
		RevalidateAfter:     cfg.RevalidateAfter,
		OriginTimeout:       cfg.OriginTimeout,
		MaxOriginFetches:    max(cfg.MaxOriginFetches, 0),
		OriginFailureWindow: cfg.OriginFailureWindow,
		StrictOutage:        !cfg.OutageStale,
		StaleIfError:        cfg.StaleIfError(),
		NegativeTTL:         cfg.NegativeTTL(),
	}
}

func serverConfig(cfg config.Tiles, extra tileserver.ExtraFunc) tileserver.Config {
	return tileserver.Config{
		CacheControl:         cfg.CacheControl,
		NegativeCacheControl: cfg.NegativeCacheControl,
		StaleCacheControl:    cfg.StaleCacheControl,
		MissingTile:          cfg.MissingTile,
		CORSAllowOrigins:     cfg.CORSAllowOrigins,
		MaxTileBytes:         cfg.MaxTileBytes,
		PublicURL:            cfg.PublicURL,
		CDNSecret:            cfg.CDNSecret,
		Extra:                extra,
	}
}

func archiveConfig(cfg config.Tiles) archive.Config {
	return archive.Config{OriginTimeout: cfg.OriginTimeout}
}

// awsSettings are the AWS client settings of the admin hand-off: the
// environment's, as the SDK reads them.
func awsSettings() awsclient.Settings { return awsclient.Settings{} }

// imagesConfig is the IIIF image service's configuration; onRender, when
// set, hears the bytes its renders hold.
func imagesConfig(cfg config.Tiles, onRender func(int64)) images.Config {
	pc := pixel.DefaultConfig()
	pc.OnInFlight = onRender
	pc.Decoders = cfg.IIIF.Decoders
	pc.MaxPixels = max(cfg.IIIF.MaxDecodedPixels, cfg.IIIF.MaxArea)
	pc.MaxBytes = int(cfg.AnswerBytes())
	pc.InFlightBytes = cfg.IIIF.RenderBytes
	return images.Config{
		Limits:           iiif.Limits{MaxWidth: cfg.IIIF.MaxWidth, MaxHeight: cfg.IIIF.MaxHeight, MaxArea: cfg.IIIF.MaxArea},
		MaxDecodedPixels: cfg.IIIF.MaxDecodedPixels,
		Pixel:            pc,
	}
}
