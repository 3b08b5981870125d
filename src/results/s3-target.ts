// src/results/s3-target.ts
import type { S3Client } from '@aws-sdk/client-s3';
/** Where one run's results go: s3://<bucket>/<key prefix>; keyPrefix = `${prefix}${namespace}/${name}/${uid}/` (ends with '/'). */
export interface S3Target { client: S3Client; bucket: string; keyPrefix: string; }
/** The object key of a result file (path relative to results.path, '/'-separated). */
export const resultKey = (target: S3Target, path: string): string => `${target.keyPrefix}results/${path}`;
