// The providers' SDKs, each loaded when first used: a replyflow that serves no LINE channel never loads
// @line/bot-sdk (and its axios), one without Slack never loads @slack/web-api, one without Stripe never
// loads stripe. Loaded at start, the three cost every process ~6 MiB whether it used them or not
// (docs/benchmarks.md, "What a process loads"). Their types are imported as usual, with `import type`;
// their values come through these.
import type * as LineSdk from '@line/bot-sdk';
import type * as SlackWebApi from '@slack/web-api';
import type Stripe from 'stripe';

export const lineSdk = (): typeof LineSdk => require('@line/bot-sdk');
export const slackWebApi = (): typeof SlackWebApi => require('@slack/web-api');
export const stripeSdk = (): typeof Stripe => require('stripe');
