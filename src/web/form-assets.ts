/**
 * The form page's stylesheet and script, served from this server (`/form/-/form.css`,
 * `/form/-/form.js`; no CDN, no external font). Kept as strings so the compiled build needs no
 * copied files. The script only adds what the page already does without it: messages next to
 * fields that are missing or over a limit before the form is sent, and the chosen file names.
 */
export const FORM_CSS = `
:root{color-scheme:light;--fg:#1f2328;--muted:#57606a;--line:#8c959f;--bg:#fff;--soft:#f6f8fa;--primary:#0550ae;--accent:#8250df;--error:#a40e26;--focus:#0969da}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--soft)}
main{max-width:42rem;margin:0 auto;padding:1rem}
.card{background:var(--bg);border:1px solid #d0d7de;border-radius:8px;padding:1.25rem}
h1{font-size:1.25rem;margin:0 0 .75rem}
.content{overflow-wrap:anywhere}
.content pre{white-space:pre-wrap;background:var(--soft);padding:.5rem;border-radius:4px}
.field{margin:1rem 0}
label,.label{display:block;font-weight:600;margin-bottom:.25rem}
.hint{color:var(--muted);font-size:.875rem;margin:.25rem 0 0}
input[type=text],input[type=number],textarea,select{width:100%;font:inherit;padding:.5rem;border:1px solid var(--line);border-radius:6px;background:var(--bg);color:var(--fg)}
textarea{min-height:6rem;resize:vertical}
input[type=file]{font:inherit;max-width:100%}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
.actions{display:flex;flex-wrap:wrap;gap:.5rem;margin-top:1.25rem}
button{font:inherit;font-weight:600;padding:.6rem 1rem;border-radius:6px;border:1px solid var(--line);background:var(--bg);color:var(--fg);cursor:pointer;min-height:44px}
button.primary{background:var(--primary);border-color:var(--primary);color:#fff}
button.accent{background:var(--accent);border-color:var(--accent);color:#fff}
button.ghost{background:transparent;border-color:transparent;text-decoration:underline}
.error{color:var(--error);font-size:.875rem;margin:.25rem 0 0}
.errors{border:2px solid var(--error);border-radius:6px;padding:.5rem .75rem;color:var(--error);margin-bottom:1rem}
.expiry{color:var(--muted);font-size:.875rem;margin-top:1rem}
`;

export const FORM_JS = `
(function(){
  var form=document.querySelector('form[data-human-input]');
  if(!form)return;
  function msg(field,text){
    var el=document.getElementById(field.getAttribute('aria-describedby').split(' ').pop());
    if(el){el.textContent=text||'';}
    if(text){field.setAttribute('aria-invalid','true');}else{field.removeAttribute('aria-invalid');}
  }
  function check(field){
    if(field.type==='file'){
      var n=field.files?field.files.length:0;
      var limit=Number(field.getAttribute('data-max-files')||0);
      if(field.required&&n===0)return 'Choose a file.';
      if(limit>0&&n>limit)return 'Choose at most '+limit+' files.';
      return '';
    }
    if(field.validity&&!field.validity.valid)return field.validationMessage;
    return '';
  }
  var fields=form.querySelectorAll('[data-field]');
  Array.prototype.forEach.call(fields,function(f){
    f.addEventListener('change',function(){msg(f,check(f));
      if(f.type==='file'){var out=document.getElementById(f.id+'-files');if(out){out.textContent=Array.prototype.map.call(f.files,function(x){return x.name;}).join(', ');}}
    });
  });
  form.setAttribute('novalidate','');
  form.addEventListener('submit',function(e){
    var first=null;
    Array.prototype.forEach.call(fields,function(f){var t=check(f);msg(f,t);if(t&&!first)first=f;});
    if(first){e.preventDefault();first.focus();return;}
    Array.prototype.forEach.call(form.querySelectorAll('button'),function(b){b.setAttribute('aria-disabled','true');});
  });
})();
`;
