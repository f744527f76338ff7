import { FormRecipients } from '../forms/form-recipients.js';
import { FormService, HUMAN_INPUT_MAIL_JOB, type FormServiceDeps } from '../forms/form-service.js';
import { sendsEmail } from '../forms/form-definition.js';
import type { AppStore } from '../apps/app-store.js';
import { mailNotConfigured } from '../mail/mail-config.js';
import { SmtpTransport } from '../mail/smtp-transport.js';
import { humanInputMailHandler, type MailJobPayload } from '../mail/human-input-mail.js';

/**
 * The Human Input side of the composition root: the form service, its email recipients and the
 * mail job that delivers them (with the start-up warning when mail is not configured).
 */
export async function createForms(d: FormServiceDeps, allApps: Pick<AppStore, 'list'>): Promise<{ forms: FormService; formRecipients: FormRecipients; close(): Promise<void> }> {
  const { config, logger } = d;
  const forms = new FormService(d);
  await forms.sealLegacyTokens();
  await forms.scheduleTimeoutScan();
  const formRecipients = new FormRecipients(d.db, d.box);
  await formRecipients.sealLegacyTokens();
  const mailProblem = mailNotConfigured(config.mail);
  // Said once, by the processes that send (those running the job worker), and only when an app
  // has an email delivery to send; one-shot CLI commands stay quiet.
  if (mailProblem && config.queue.worker) {
    const senders = (await allApps.list()).filter((a) => (a.dsl.workflow?.graph.nodes ?? []).some((n) => n.data.type === 'human-input' && sendsEmail(n.data)));
    if (senders.length > 0) logger.warn({ apps: senders.map((a) => a.id) }, `${mailProblem}. The Human Input email deliveries of ${senders.map((a) => `"${a.name}"`).join(', ')} will fail until then.`);
  }
  const transport = mailProblem ? undefined : new SmtpTransport(config.mail);
  d.queue.register<MailJobPayload>(
    HUMAN_INPUT_MAIL_JOB,
    humanInputMailHandler({ recipients: formRecipients, transport, notConfigured: mailProblem, appWebUrl: config.webForms.appWebUrl, clock: d.clock, logger }),
  );
  return { forms, formRecipients, close: async () => transport?.close() };
}
