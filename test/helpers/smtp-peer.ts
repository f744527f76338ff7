import type { AddressInfo } from 'node:net';
import PostalMime from 'postal-mime';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  readonly envelopeTo: string[];
  readonly to: string;
  readonly from: string;
  readonly subject: string;
  readonly html: string;
  readonly text: string;
}

export interface SmtpPeer {
  readonly port: number;
  readonly mails: ReceivedMail[];
  /** Connections refused so far (`refuseFirst`). */
  readonly refused: () => number;
  close(): Promise<void>;
}

/** What the peer answers to one `RCPT TO`: accept (undefined), or refuse with an SMTP code and text. */
export type RecipientAnswer = { readonly code: number; readonly message: string } | undefined;

/**
 * A real SMTP server (smtp-server from npm) on a free local port: plain connection, AUTH PLAIN/LOGIN
 * with one user, every accepted message parsed (postal-mime) into `mails`. `refuseFirst` answers
 * the first N connections with 421, as a busy server does; `onRecipient` decides each `RCPT TO`
 * (it may wait, holding the sender in the middle of its conversation).
 */
export async function startSmtpPeer(opts: { user: string; pass: string; refuseFirst?: number; onRecipient?: (address: string) => RecipientAnswer | Promise<RecipientAnswer> }): Promise<SmtpPeer> {
  const mails: ReceivedMail[] = [];
  let refused = 0;
  const server = new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authMethods: ['PLAIN', 'LOGIN'],
    logger: false,
    onConnect(_session, cb) {
      if (refused < (opts.refuseFirst ?? 0)) {
        refused++;
        const err = Object.assign(new Error('Service not available, try again later'), { responseCode: 421 });
        return cb(err);
      }
      cb();
    },
    onAuth(auth, _session, cb) {
      if (auth.username === opts.user && auth.password === opts.pass) return cb(null, { user: auth.username });
      cb(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onRcptTo(address, _session, cb) {
      if (!opts.onRecipient) return cb();
      Promise.resolve(opts.onRecipient(address.address)).then(
        (answer) => (answer ? cb(Object.assign(new Error(answer.message), { responseCode: answer.code })) : cb()),
        (err: Error) => cb(err),
      );
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        PostalMime.parse(Buffer.concat(chunks)).then(
          (m) => {
            mails.push({
              envelopeTo: session.envelope.rcptTo.map((r) => r.address),
              to: (m.to ?? []).map((a) => a.address).join(', '),
              from: m.from?.address ?? '',
              subject: m.subject ?? '',
              html: m.html ?? '',
              text: m.text ?? '',
            });
            cb();
          },
          (err: Error) => cb(err),
        );
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.server.address() as AddressInfo).port;
  return { port, mails, refused: () => refused, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** Dovetail's mail settings pointing at a peer. */
export function smtpEnv(port: number, user: string, pass: string): Record<string, string> {
  return {
    MAIL_TYPE: 'smtp',
    SMTP_SERVER: '127.0.0.1',
    SMTP_PORT: String(port),
    SMTP_USERNAME: user,
    SMTP_PASSWORD: pass,
    SMTP_USE_TLS: 'false',
    MAIL_DEFAULT_SEND_FROM: 'Dovetail <forms@dovetail.test>',
  };
}
