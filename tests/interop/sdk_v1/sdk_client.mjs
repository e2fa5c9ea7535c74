// The SDK v1 Client both scripts use: one handler per notification kind mcpfan delivers, each
// notification pushed in arrival order to `received` (client.mjs, resume.mjs).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
    PromptListChangedNotificationSchema,
    ResourceListChangedNotificationSchema,
    ResourceUpdatedNotificationSchema,
    ToolListChangedNotificationSchema
} from '@modelcontextprotocol/sdk/types.js';
import { collectNotifications } from '../lib/common.mjs';

export function newSdkClient(name, onerror) {
    const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
    client.onerror = onerror;
    const received = collectNotifications(client, [
        ResourceUpdatedNotificationSchema,
        ToolListChangedNotificationSchema,
        PromptListChangedNotificationSchema,
        ResourceListChangedNotificationSchema
    ]);
    return { client, received };
}
