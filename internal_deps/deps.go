package deps
import (
 _ "github.com/aws/aws-lambda-go/lambda"
 _ "github.com/aws/aws-lambda-go/lambdaurl"
 _ "github.com/aws/aws-lambda-go/events"
 _ "github.com/aws/aws-sdk-go-v2/aws"
 _ "github.com/aws/aws-sdk-go-v2/config"
 _ "github.com/aws/aws-sdk-go-v2/service/s3"
 _ "github.com/aws/aws-sdk-go-v2/service/cloudfront"
 _ "github.com/aws/aws-sdk-go-v2/feature/s3/manager"
 _ "github.com/aws/aws-sdk-go-v2/credentials"
 _ "github.com/rclone/gofakes3"
 _ "github.com/rclone/gofakes3/s3mem"
 _ "github.com/awslabs/goformation/v7"
 _ "gopkg.in/yaml.v3"
)
