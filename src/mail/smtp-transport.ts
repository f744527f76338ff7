import type { Transporter } from 'nodemailer';
import type { MailConfig } from './mail-config.js';

export interface OutgoingMessage {
  readonly to: string;
  readonly subject: string;
  readonly html: string;
  readonly text: string;
}

/** Sends one message; throws `MailSendError` (with `permanent` for errors a retry cannot fix). */
export interface MailTransport {
  send(message: OutgoingMessage): Promise<void>;
  close(): void;
}

export class MailSendError extends Error {
  override name = 'MailSendError';
  constructor(
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
  }
}

interface SmtpError {
  readonly code?: string;
  readonly responseCode?: number;
  readonly message?: string;
}

/** SMTP through nodemailer, with Dify's TLS settings: implicit TLS, STARTTLS (opportunistic), or none. */
export class SmtpTransport implements MailTransport {
  readonly #config: MailConfig;
  readonly #from: string;
  /** Made on the first message: nodemailer is imported only by processes that send mail. */
  #transport: Promise<Transporter> | undefined;

  constructor(config: MailConfig) {
    this.#config = config;
    this.#from = config.from ?? '';
  }

  #transporter(): Promise<Transporter> {
    const config = this.#config;
    const secure = config.useTls && !config.opportunisticTls;
    return (this.#transport ??= import('nodemailer').then(({ default: nodemailer }) =>
      nodemailer.createTransport({
        host: config.server,
        port: config.port,
        secure,
        requireTLS: config.useTls && config.opportunisticTls,
        ignoreTLS: !config.useTls,
        auth: config.username ? { user: config.username, pass: config.password ?? '' } : undefined,
        connectionTimeout: 30_000,
        greetingTimeout: 30_000,
        socketTimeout: 60_000,
      }),
    ));
  }

  async send(m: OutgoingMessage): Promise<void> {
    const transport = await this.#transporter();
    try {
      await transport.sendMail({ from: this.#from, to: m.to, subject: m.subject, html: m.html, text: m.text });
    } catch (raw) {
      const err = raw as SmtpError;
      if (err.code === 'EAUTH') {
        throw new MailSendError(`SMTP authentication failed (check SMTP_USERNAME and SMTP_PASSWORD): ${err.message ?? ''}`.trim(), true);
      }
      // 5xx replies to the envelope are permanent for that address; anything else may pass on a retry.
      const permanent = err.code === 'EENVELOPE' && typeof err.responseCode === 'number' && err.responseCode >= 500;
      throw new MailSendError(`SMTP delivery failed${err.code ? ` (${err.code})` : ''}: ${err.message ?? String(raw)}`, permanent);
    }
  }

  close(): void {
    void this.#transport?.then((t) => t.close());
  }
}
