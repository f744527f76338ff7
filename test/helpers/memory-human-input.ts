import { randomBytes } from 'node:crypto';
import type { HumanInputContext, HumanInputDecision, HumanInputGateway, HumanInputRequired, RunResumer } from '../../src/forms/human-input-port.js';

interface Form {
  readonly id: string;
  readonly token: string;
  readonly runId: string;
  readonly nodeId: string;
  readonly required: HumanInputRequired;
  status: 'waiting' | 'submitted' | 'timeout' | 'closed';
  action?: string;
  inputs?: Record<string, unknown>;
}

/**
 * A tiny in-memory Human Input gateway for tests (the real form store is src/forms, built by the
 * Human Input issue). Forms are keyed by run and node; `submit` / `expire` ring the resumer.
 */
export class MemoryHumanInput implements HumanInputGateway {
  readonly forms = new Map<string, Form>();
  readonly closed: string[] = [];
  decisions = 0;
  resumer: RunResumer | undefined;
  /** Called after each `pause` decision (to simulate a submit racing the pause). */
  onPause: ((form: Form, call: number) => void) | undefined;

  async decide(ctx: HumanInputContext): Promise<HumanInputDecision> {
    this.decisions++;
    const key = `${ctx.runId}:${ctx.nodeId}`;
    let form = this.forms.get(key);
    if (!form) {
      const actions = (ctx.data.user_actions as { id: string; title: string; button_style?: string }[] | undefined) ?? [];
      const token = randomBytes(16).toString('base64url');
      form = {
        id: `form-${this.forms.size + 1}`,
        token,
        runId: ctx.runId,
        nodeId: ctx.nodeId,
        status: 'waiting',
        required: {
          form_id: `form-${this.forms.size + 1}`,
          node_id: ctx.nodeId,
          node_title: ctx.nodeTitle,
          form_content: ctx.render(String(ctx.data.form_content ?? '')),
          inputs: (ctx.data.inputs as Record<string, unknown>[] | undefined) ?? [],
          actions: actions.map((a) => ({ id: a.id, title: a.title, button_style: a.button_style ?? 'default' })),
          display_in_ui: true,
          form_token: token,
          resolved_default_values: {},
          expiration_time: Math.floor(ctx.now / 1000) + 3600,
        },
      };
      this.forms.set(key, form);
    }
    if (form.status === 'submitted') {
      const title = form.required.actions.find((a) => a.id === form.action)?.title ?? '';
      const rendered = form.required.form_content.replace(/\{\{#\$output\.(\w+)#\}\}/g, (_m, k: string) => String(form.inputs?.[k] ?? ''));
      return {
        type: 'completed',
        handle: form.action!,
        inputs: form.inputs!,
        outputs: { ...form.inputs, __action_id: form.action, __action_value: title, __rendered_content: rendered },
        filled: { node_id: form.nodeId, node_title: form.required.node_title, rendered_content: rendered, action_id: form.action!, action_text: title, submitted_data: form.inputs! },
      };
    }
    if (form.status === 'timeout') {
      return {
        type: 'timeout',
        handle: '__timeout',
        outputs: { __action_id: '', __action_value: '', __rendered_content: form.required.form_content },
        timeout: { node_id: form.nodeId, node_title: form.required.node_title, expiration_time: form.required.expiration_time },
      };
    }
    const f = form;
    queueMicrotask(() => this.onPause?.(f, this.decisions));
    return { type: 'pause', required: form.required };
  }

  async closeForms(runId: string): Promise<void> {
    this.closed.push(runId);
    for (const f of this.forms.values()) if (f.runId === runId && f.status === 'waiting') f.status = 'closed';
  }

  #byToken(token: string): Form {
    const f = [...this.forms.values()].find((x) => x.token === token);
    if (!f) throw new Error(`no form with token ${token}`);
    return f;
  }

  /** Marks the form submitted, then resumes its run (unless `resume` is false). */
  async submit(token: string, action: string, inputs: Record<string, unknown> = {}, resume = true): Promise<void> {
    const f = this.#byToken(token);
    if (f.status !== 'waiting') throw new Error(`form ${f.id} is ${f.status}`);
    Object.assign(f, { status: 'submitted', action, inputs });
    if (resume) await this.resumer!.resume(f.runId);
  }

  async expire(token: string): Promise<void> {
    const f = this.#byToken(token);
    f.status = 'timeout';
    await this.resumer!.resume(f.runId);
  }
}
