// Herald's typed client for app developers: the HTTP API's types are generated from events/openapi.json
// (`npm run generate`, by openapi-typescript); the WebSocket frame and the IM payloads, which no OpenAPI
// describes, are written here from contract §1-2.
import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./schema";

export type { components, paths };
export type Schemas = components["schemas"];

/** A client of Herald's HTTP API acting as one app user (the JWT your identity provider issued). */
export function heraldClient(baseUrl: string, token: string): Client<paths> {
  return createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });
}

/** What a partner's status webhook receives (contract §3), once its Standard Webhooks signature checks out:
 * the event as `GET /events/external/{event_id}` shows it when it reached the status. */
export interface EventStatusWebhook {
  type: `event.${Schemas["EventFateOut"]["status"]}`;
  timestamp: string; // ISO 8601, UTC
  data: Schemas["EventFateOut"];
}

/** What every WebSocket connection of a user receives after a write that changes the unread count. */
export interface InboxUpdated {
  type: "inbox_updated";
  unreadCount: number;
  version: number; // grows per user: drop a frame older than the last one applied
}

export interface ImConfirmAction {
  action: "accept" | "reject";
  label: string;
  style: "primary" | "secondary" | "danger";
}

/** The `Data` of a Tencent IM custom message that asks the receiver to act. */
export interface ImConfirm {
  type: "im_confirm";
  version: 1;
  confirm_id: string;
  business_type: string;
  business_subtype: string;
  msg: string;
  status: "pending";
  actions: ImConfirmAction[];
  created_at_ms: number;
  expire_at_ms: number;
}

/** Sent to both parties when the confirm ends: every device greys the buttons. */
export interface ImConfirmUpdate extends Omit<ImConfirm, "type" | "status"> {
  type: "im_confirm_update";
  status: "accepted" | "rejected" | "cancelled" | "expired" | "failed";
  processed_action: string;
  processed_at_ms: number;
}

export type ImPayload = ImConfirm | ImConfirmUpdate;

/** The IM custom element's `Data` string, as Herald's payload (undefined for anything else). */
export function imPayload(data: string): ImPayload | undefined {
  const parsed: unknown = JSON.parse(data);
  if (typeof parsed !== "object" || parsed === null || !("type" in parsed)) return undefined;
  return parsed.type === "im_confirm" || parsed.type === "im_confirm_update" ? (parsed as ImPayload) : undefined;
}
