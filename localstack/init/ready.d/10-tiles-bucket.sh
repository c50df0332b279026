#!/bin/bash
# LocalStack init hook (ready stage): create the tiles bucket, so that tiles can be
# uploaded before the functions are deployed. awslocal is part of the image.
set -euo pipefail

bucket="${TILES_BUCKET:-tilesieve-tiles-000000000000-us-east-1}"
if awslocal s3api head-bucket --bucket "$bucket" >/dev/null 2>&1; then
	echo "tilesieve: bucket $bucket exists"
else
	region="${AWS_DEFAULT_REGION:-us-east-1}"
	if [ "$region" = us-east-1 ]; then
		awslocal s3api create-bucket --bucket "$bucket" >/dev/null
	else
		awslocal s3api create-bucket --bucket "$bucket" \
			--create-bucket-configuration "LocationConstraint=$region" >/dev/null
	fi
	echo "tilesieve: created bucket $bucket"
fi
